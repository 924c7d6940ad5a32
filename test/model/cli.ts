import { parseArgs } from 'node:util';
import { replayHint, runModel } from './run';

/**
 * `npm run model -- --runs N --seed S [--path P --replay-path R] [--max-commands M] [--minutes T]`:
 * the money model's long run against the Redis at REDIS_URL (`--minutes`: stop generating after T
 * minutes and report how many sequences fitted). Prints how many generated sequences met each
 * command and race, the run time, and on a failure the shrunk counterexample and how to replay it.
 */
const { values } = parseArgs({
  options: {
    runs: { type: 'string', default: '1000' },
    seed: { type: 'string' },
    path: { type: 'string' },
    'replay-path': { type: 'string' },
    'max-commands': { type: 'string' },
    minutes: { type: 'string' },
  },
});

const runs = Number(values.runs);
const seed = values.seed === undefined ? Math.floor(Math.random() * 2 ** 31) : Number(values.seed);
if (!Number.isSafeInteger(runs) || runs < 1 || !Number.isSafeInteger(seed)) {
  console.error('usage: npm run model -- --runs N [--seed S] [--path P --replay-path R] [--max-commands M] [--minutes T]');
  process.exit(2);
}

const sequences = new Map<string, number>();
const total = new Map<string, number>();
let passed = 0;
const started = Date.now();

function report(): void {
  const ms = Date.now() - started;
  console.log(`\n${passed} sequences passed (a shrink's passing tries included) in ${(ms / 1000).toFixed(1)} s (${Math.round((passed / ms) * 60_000)} per minute); seed ${seed}`);
  console.log(`${'met'.padEnd(52)}${'sequences'.padStart(10)}${'times'.padStart(8)}`);
  for (const what of [...sequences.keys()].sort()) console.log(`${what.padEnd(52)}${String(sequences.get(what)).padStart(10)}${String(total.get(what)).padStart(8)}`);
}

runModel({
  runs,
  seed,
  ...(values.path === undefined ? {} : { path: values.path }),
  ...(values['replay-path'] === undefined ? {} : { replayPath: values['replay-path'] }),
  ...(values['max-commands'] === undefined ? {} : { maxCommands: Number(values['max-commands']) }),
  ...(values.minutes === undefined ? {} : { timeLimitMs: Number(values.minutes) * 60_000 }),
  onRun: (stats) => {
    passed += 1;
    for (const [what, n] of stats) {
      sequences.set(what, (sequences.get(what) ?? 0) + 1);
      total.set(what, (total.get(what) ?? 0) + n);
    }
  },
}).then(
  () => {
    report();
  },
  (err: Error) => {
    report();
    console.error(`\n${err.message}\n${err.cause instanceof Error ? err.cause.message : ''}\n${replayHint(err)}`);
    process.exitCode = 1;
  },
);
