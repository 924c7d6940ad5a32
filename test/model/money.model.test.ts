import { replayHint, runModel } from './run';

/**
 * The money model's fast configuration (docs/reliability.md, "The money model"): generated
 * engine, wallet, worker, upkeep, process and operator sequences against the real gateway and
 * worker code on a real Redis, the contract's money invariants checked after each. A failure
 * shows fast-check's shrunk command list, its seed and path, and the `npm run model` line that
 * replays it. MODEL_SEED fixes the seed; MODEL_RUNS the number of sequences.
 */
const RUNS = Number(process.env.MODEL_RUNS ?? 100);

it(`keeps the money invariants over ${RUNS} generated sequences`, async () => {
  const seed = process.env.MODEL_SEED === undefined ? Date.now() % 2 ** 31 : Number(process.env.MODEL_SEED);
  let ran = 0;
  try {
    await runModel({ runs: RUNS, seed, onRun: () => (ran += 1) });
  } catch (err) {
    const e = err as Error;
    throw new Error(`${e.message}\n${e.cause instanceof Error ? e.cause.message : ''}\n${replayHint(e)}`);
  }
  // Every sequence ran to its invariants (a property that skipped its body would pass in no time).
  expect(ran).toBe(RUNS);
}, 300_000);
