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
}

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

function summarise(connections: number, seconds: number, latencies: Samples, statuses: Record<string, number>, otherErrors: number): LoadResult {
  const sorted = latencies.sorted();
  const non2xx = Object.entries(statuses).reduce((n, [code, count]) => (code.startsWith('2') ? n : n + count), 0);
  return {
    connections,
    seconds: round2(seconds),
    requests: latencies.length,
    rps: Math.round(latencies.length / seconds),
    p50: round2(percentile(sorted, 50)),
    p99: round2(percentile(sorted, 99)),
    max: round2(sorted.length === 0 ? 0 : (sorted[sorted.length - 1] ?? 0)),
    errors: non2xx + otherErrors,
    statuses,
  };
}

/** The `rate` load: one timer releases every request that is due, the pool carries them. */
async function runPaced(spec: LoadSpec & { rate: number }): Promise<LoadResult> {
  const pool = new Pool(spec.url, { connections: spec.connections, pipelining: 1 });
  const generators = Array.from({ length: spec.connections }, (_, i) => spec.request(i));
  const latencies = new Samples();
  const statuses: Record<string, number> = {};
  const intervalMs = 1000 / spec.rate;
  const total = Math.floor(spec.rate * spec.durationSec);
  let failures = 0;
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
        latencies.push(performance.now() - scheduledAt);
        statuses[res.statusCode] = (statuses[res.statusCode] ?? 0) + 1;
        generator.onResponse?.(res.statusCode, text, context, {});
      })
      .catch(() => {
        failures += 1;
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
  await pool.close();
  return summarise(spec.connections, seconds, latencies, statuses, failures);
}

export function runLoad(spec: LoadSpec): Promise<LoadResult> {
  if (spec.rate !== undefined) return runPaced({ ...spec, rate: spec.rate });
  const connections = spec.amount === undefined ? spec.connections : Math.max(1, Math.min(spec.connections, spec.amount));
  const latencies = new Samples();
  const statuses: Record<string, number> = {};
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
        resolve(summarise(connections, (performance.now() - start) / 1000, latencies, statuses, result.errors + result.timeouts));
      },
    );
    instance.on('response', (_client: unknown, status: number, _bytes: number, ms: number) => {
      statuses[status] = (statuses[status] ?? 0) + 1;
      latencies.push(ms);
    });
    // autocannon ignores the duration when an amount is set: the duration still ends the run.
    if (spec.amount !== undefined) capTimer = setTimeout(() => instance.stop(), spec.durationSec * 1000);
  });
}
