import type { InFlightCap } from '../../src/duties/in-flight-cap';

/** A wallet's max_in_flight never reached: for use cases and processors tested on their own. */
export const UNCAPPED: Pick<InFlightCap, 'tryTake' | 'give'> = { tryTake: () => true, give: () => undefined };
