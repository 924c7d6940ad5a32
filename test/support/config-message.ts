import { ConfigError } from '../../src/config/env';

/** The message of the ConfigError `load` throws; a configuration it accepts fails the test. */
export function messageOf(load: () => unknown): string {
  try {
    load();
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as Error).message;
  }
  throw new Error('the configuration was accepted');
}
