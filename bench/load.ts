import { performance } from 'node:perf_hooks';
import autocannon from 'autocannon';
import { Pool } from 'undici';

/**
 * One fixed load: autocannon at N keep-alive connections, one request in flight on each
 * (pipelining 1, as an engine's HTTP client sends), for a duration or a fixed number of requests.
 * Latency is taken from autocannon's per-response event at sub-millisecond resolution (its own
 * histogram keeps whole milliseconds and 2xx answers only).
 */
export interface LoadSpec {
  readonly url: string;
  readonly connections: number;
  readonly durationSec: number;
  /** Stop after this many requests (a win needs one bet each) or at the duration, whichever comes first. */
  readonly amount?: number;
  /**
   * A fixed arrival rate (requests/s, in all) instead of one request in flight per connection:
   * requests leave on a fixed schedule whatever the answers do, over at most `connections`
   * keep-alive connections. Each latency counts from the request's scheduled time, so a request
   * that waited for a free connection carries that wait (no coordinated omission).
   */
  readonly rate?: number;
  /** The request generator of connection `index` (0-based): its setupRequest varies and signs each body. */
  request(index: number): autocannon.Request;
  /** Also count this run into `tally`, which sums alternating slices of one case. */
  readonly tally?: LoadTally;
}

export interface LoadResult {
  readonly connections: number;
  readonly seconds: number;
  readonly requests: number;
  readonly rps: number;
  readonly p50: number;
  readonly p99: number;
  readonly max: number;
  /** Non-2xx answers, connection errors and timeouts. */
  readonly errors: number;
  readonly statuses: Readonly<Record<string, number>>;
  /** Answers slower than SLOW_MS (at most MAX_SLOW of them): when each was sent (wall clock, ms) and how long it took. */
  readonly slow?: readonly SlowRequest[];
}

export interface SlowRequest {
  /** Date.now() when the request was scheduled (fixed rate) or sent. */
  readonly at: number;
  readonly ms: number;
  readonly status: number;
}

/** A request slower than this is kept with its time, so that the bench can say what stalled it. */
export const SLOW_MS = 250;
const MAX_SLOW = 500;

class Samples {
  private values = new Float64Array(1 << 16);
  length = 0;

  push(value: number): void {
    if (this.length === this.values.length) {
      const bigger = new Float64Array(this.values.length * 2);
      bigger.set(this.values);
      this.values = bigger;
    }
    this.values[this.length++] = value;
  }

  sorted(): Float64Array {
    return this.values.slice(0, this.length).sort();
  }
}

function percentile(sorted: Float64Array, p: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? 0;
}

const round2 = (n: number): number => Math.round(n * 100) / 100;

/**
 * What load measured: every latency, the answers by status, the requests that got none, and the
 * time it took. A run fills its own; alternating slices of one case also fill a shared one.
 */
export class LoadTally {
  private readonly latencies = new Samples();
  private readonly statuses: Record<string, number> = {};
  private readonly slow: SlowRequest[] = [];
  private failures = 0;
  private seconds = 0;

  constructor(private readonly connections: number) {}

  answered(status: number, ms: number): void {
    this.statuses[status] = (this.statuses[status] ?? 0) + 1;
    this.latencies.push(ms);
    if (ms >= SLOW_MS && this.slow.length < MAX_SLOW) this.slow.push({ at: Math.round(performance.timeOrigin + performance.now() - ms), ms: round2(ms), status });
  }

  failed(count = 1): void {
    this.failures += count;
  }

  took(seconds: number): void {
    this.seconds += seconds;
  }

  result(): LoadResult {
    const sorted = this.latencies.sorted();
    const non2xx = Object.entries(this.statuses).reduce((n, [code, count]) => (code.startsWith('2') ? n : n + count), 0);
    return {
      connections: this.connections,
      seconds: round2(this.seconds),
      requests: this.latencies.length,
      rps: this.seconds === 0 ? 0 : Math.round(this.latencies.length / this.seconds),
      p50: round2(percentile(sorted, 50)),
      p99: round2(percentile(sorted, 99)),
      max: round2(sorted.length === 0 ? 0 : (sorted[sorted.length - 1] ?? 0)),
      errors: non2xx + this.failures,
      statuses: { ...this.statuses },
      slow: [...this.slow],
    };
  }
}

/** This run's own tally, and the spec's shared one when it has one. */
function talliesFor(spec: LoadSpec, connections: number): { own: LoadTally; all: LoadTally[] } {
  const own = new LoadTally(connections);
  return { own, all: spec.tally === undefined ? [own] : [own, spec.tally] };
}

/** The `rate` load: one timer releases every request that is due, the pool carries them. */
async function runPaced(spec: LoadSpec & { rate: number }): Promise<LoadResult> {
  const pool = new Pool(spec.url, { connections: spec.connections, pipelining: 1 });
  const generators = Array.from({ length: spec.connections }, (_, i) => spec.request(i));
  const { own, all } = talliesFor(spec, spec.connections);
  const intervalMs = 1000 / spec.rate;
  const total = Math.floor(spec.rate * spec.durationSec);
  const inFlight = new Set<Promise<void>>();
  const start = performance.now();

  const send = (k: number, scheduledAt: number): void => {
    const generator = generators[k % generators.length] as autocannon.Request;
    const context: Record<string, unknown> = {};
    const req = generator.setupRequest ? generator.setupRequest({ ...generator }, context) : generator;
    const done = pool
      .request({ method: (req.method ?? 'GET') as 'GET', path: req.path ?? '/', headers: req.headers, body: req.body, headersTimeout: 10_000, bodyTimeout: 10_000 })
      .then(async (res) => {
        const text = await res.body.text();
        const ms = performance.now() - scheduledAt;
        for (const t of all) t.answered(res.statusCode, ms);
        generator.onResponse?.(res.statusCode, text, context, {});
      })
      .catch(() => {
        for (const t of all) t.failed();
      })
      .finally(() => inFlight.delete(done));
    inFlight.add(done);
  };

  let next = 0;
  await new Promise<void>((resolve) => {
    const tick = (): void => {
      const now = performance.now();
      while (next < total && start + next * intervalMs <= now) {
        send(next, start + next * intervalMs);
        next += 1;
      }
      if (next >= total) resolve();
      else setTimeout(tick, Math.max(0, start + next * intervalMs - performance.now()));
    };
    tick();
  });
  await Promise.all([...inFlight]);
  const seconds = (performance.now() - start) / 1000;
  for (const t of all) t.took(seconds);
  await pool.close();
  return own.result();
}

export function runLoad(spec: LoadSpec): Promise<LoadResult> {
  if (spec.rate !== undefined) return runPaced({ ...spec, rate: spec.rate });
  const connections = spec.amount === undefined ? spec.connections : Math.max(1, Math.min(spec.connections, spec.amount));
  const { own, all } = talliesFor(spec, connections);
  let clients = 0;

  return new Promise((resolve, reject) => {
    const start = performance.now();
    let capTimer: NodeJS.Timeout | undefined;
    const instance = autocannon(
      {
        url: spec.url,
        connections,
        pipelining: 1,
        duration: spec.durationSec,
        amount: spec.amount,
        timeout: 10,
        skipAggregateResult: true,
        // A static placeholder; each connection gets its own generator in setupClient.
        requests: [{ method: 'GET', path: '/' }],
        setupClient: (client) => client.setRequests([spec.request(clients++)]),
      },
      (err, result) => {
        if (capTimer) clearTimeout(capTimer);
        if (err) return reject(err);
        const seconds = (performance.now() - start) / 1000;
        for (const t of all) {
          t.took(seconds);
          t.failed(result.errors + result.timeouts);
        }
        resolve(own.result());
      },
    );
    instance.on('response', (_client: unknown, status: number, _bytes: number, ms: number) => {
      for (const t of all) t.answered(status, ms);
    });
    // autocannon ignores the duration when an amount is set: the duration still ends the run.
    if (spec.amount !== undefined) capTimer = setTimeout(() => instance.stop(), spec.durationSec * 1000);
  });
}
