import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseOptions } from '../../bench/options';
import { summariseProfiles } from '../../bench/profile';
import { render, type BenchReport } from '../../bench/report';

/** The bench's reading of CPU profiles: busy time per request by area, the reference beside the gateway. */
const ROOT = '/repo';
let dir: string;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'bench-profile-'));
});

afterAll(() => rmSync(dir, { recursive: true, force: true }));

const frame = (functionName: string, url = '') => ({ functionName, url, lineNumber: 0 });

/** One process's profile: node 1 the sampler's own call, 2 idle, 3 our store, 4 ioredis. */
function writeProfile(name: string, samples: number[], deltas: number[]): string {
  const file = join(dir, `${name}.cpuprofile`);
  const nodes = [
    { id: 1, callFrame: frame('dispatch') },
    { id: 2, callFrame: frame('(idle)') },
    { id: 3, callFrame: frame('claim', `file://${ROOT}/dist/src/store/transactions.js`) },
    { id: 4, callFrame: frame('Command', `file://${ROOT}/node_modules/ioredis/built/Command.js`) },
  ];
  writeFileSync(file, JSON.stringify({ nodes, samples, timeDeltas: deltas }));
  return file;
}

it("leaves out each profile's first sample (timed from the profiler's start) and idle time, and sums the processes", () => {
  const a = writeProfile('a', [1, 3, 4, 2], [900_000, 3_000, 1_000, 5_000]);
  const b = writeProfile('b', [1, 3], [700_000, 2_000]);
  const summary = summariseProfiles([a, b], ROOT, 10);
  expect(summary).toMatchObject({ files: 2, requests: 10, busyMs: 6, idleMs: 5 });
  expect(summary.areas).toEqual([
    { area: 'dist/src/store', selfMs: 5, percent: 83.3 },
    { area: 'npm:ioredis', selfMs: 1, percent: 16.7 },
  ]);
});

it('prints the busy time per bet by area, the gateway beside the reference server', () => {
  const gateway = summariseProfiles([writeProfile('g', [1, 3, 4], [1, 4_000, 2_000])], ROOT, 10);
  const reference = summariseProfiles([writeProfile('r', [1, 4], [1, 1_000])], ROOT, 10);
  const report: BenchReport = {
    date: '2026-11-27T00:00:00.000Z',
    git: { sha: 'abc1234', dirty: false },
    machine: { cpus: 2, node: 'v20', loadAverageAtStart: [0, 0, 0] },
    options: parseOptions([]),
    cases: {},
    walletConnections: {},
    memory: {},
    skipped: [],
    profile: gateway,
    referenceProfile: reference,
  };
  const text = render(report);
  expect(text).toContain('the gateway 600 µs busy per bet (1 processes, 10 bets), the reference server 100 µs busy per bet');
  expect(text).toMatch(/\ndist\/src\/store +400 +0 +400\n/);
  expect(text).toMatch(/\nnpm:ioredis +200 +100 +100(?:\n|$)/);
});
