import { availableParallelism } from 'node:os';
import { parseArgs } from 'node:util';

/** The parts of a run, in the order they run; `--only` picks some. */
export const PARTS = ['direct', 'reference', 'gateway', 'worker', 'tls'] as const;
export type Part = (typeof PARTS)[number];

/** `npm run bench -- [--connections N] [--duration S] [--quick] [--profile] [--alloc] [--only PARTS] [--processes N] [--tracing] [--ledger] [--no-build] [--verbose]` */
export interface BenchOptions {
  readonly connections: number;
  /** Seconds of measured load per case. */
  readonly duration: number;
  /** Seconds of unmeasured load before each case. */
  readonly warmup: number;
  /** The low-concurrency latency cases (added p50). */
  readonly lowConnections: number;
  /** Retry jobs queued for the worker case. */
  readonly retryJobs: number;
  readonly quick: boolean;
  readonly profile: boolean;
  readonly alloc: boolean;
  /**
   * Requests (bets and their wins, half each) for the long RSS run, 0 = not run. Not part of the
   * default run: a million requests take about ten minutes on this box.
   */
  readonly endurance: number;
  /** The parts to run (default all); the targets of parts left out read n/a. */
  readonly only: readonly Part[];
  /** Gateway and reference-server processes (GATEWAY_PROCESSES). */
  readonly processes: number;
  readonly build: boolean;
  /** Keep the gateway's stdout (its logs) for a failed start. */
  readonly verbose: boolean;
  readonly logLevel: string;
  /** Tracing on in the gateway and the worker: every request sampled, exported over OTLP/HTTP to a sink process. */
  readonly tracing: boolean;
  /** Also the bet case with the ledger off and on, in alternating slices (PostgreSQL at 127.0.0.1:5432, else PGlite). */
  readonly ledger: boolean;
}

const USAGE = `usage: npm run bench -- [options]
  --connections N   load connections per case (default 64)
  --duration S      seconds of measured load per case (default 10; --quick: 2)
  --quick           smoke run: short cases, fewer retry jobs
  --profile         also profile the CPU of a bet, the reference server's and the gateway's, over the
                    same measured load: the top self-time functions and µs per bet by area, side by side
  --alloc           also count the bytes allocated per bet, by the reference server and the gateway
                    (V8's sampling heap profiler, collected objects included): moves little with the box
  --endurance N     also drive N requests (bets and wins) through one more gateway and sample its RSS
                    every 10%: the "RSS after 1 M requests" target (--endurance 1000000: ~10 minutes)
  --only LIST       comma-separated parts to run, of ${PARTS.join(', ')} (default all; worker needs gateway)
  --processes N     gateway / reference server processes (default: available cores)
  --log-level L     gateway LOG_LEVEL (default info: the logging cost is part of the product)
  --tracing         tracing on in the gateway and the worker (OTLP http/protobuf, every request
                    sampled) to a sink process: the cost of tracing; the report is written as -tracing
  --ledger          also bets through a gateway and worker without a ledger and with one (DATABASE_URL:
                    a throwaway database at 127.0.0.1:5432, else an embedded PGlite), alternating
                    slices: the outbox's Redis cost and the money path's CPU per bet, off against on
  --no-build        use dist/ as it is (default: npm run build first)
  --verbose         keep the gateway's stdout for error reports`;

function positive(name: string, text: string | undefined, fallback: number): number {
  if (text === undefined) return fallback;
  const value = Number(text);
  if (!Number.isFinite(value) || value <= 0) throw new Error(`--${name}: must be a positive number, got ${JSON.stringify(text)}\n${USAGE}`);
  return value;
}

export function parseOptions(argv: readonly string[]): BenchOptions {
  const { values } = parseArgs({
    args: [...argv],
    options: {
      connections: { type: 'string' },
      duration: { type: 'string' },
      quick: { type: 'boolean', default: false },
      profile: { type: 'boolean', default: false },
      alloc: { type: 'boolean', default: false },
      only: { type: 'string' },
      endurance: { type: 'string' },
      processes: { type: 'string' },
      'log-level': { type: 'string', default: 'info' },
      'no-build': { type: 'boolean', default: false },
      verbose: { type: 'boolean', default: false },
      tracing: { type: 'boolean', default: false },
      ledger: { type: 'boolean', default: false },
      help: { type: 'boolean', default: false },
    },
  });
  if (values.help) {
    console.log(USAGE);
    process.exit(0);
  }
  const quick = values.quick;
  const only = values.only === undefined ? [...PARTS] : values.only.split(',').map((p) => p.trim());
  const unknown = only.filter((p) => !(PARTS as readonly string[]).includes(p));
  if (unknown.length > 0) throw new Error(`--only: unknown part(s) ${unknown.join(', ')}\n${USAGE}`);
  const duration = positive('duration', values.duration, quick ? 2 : 10);
  return {
    connections: Math.round(positive('connections', values.connections, 64)),
    duration,
    warmup: Math.min(2, Math.max(0.5, duration / 5)),
    lowConnections: 8,
    retryJobs: Math.round(Math.min(3000, Math.max(300, duration * 300))),
    quick,
    profile: values.profile,
    alloc: values.alloc,
    only: only as Part[],
    endurance: values.endurance === undefined ? 0 : Math.round(positive('endurance', values.endurance, 0)),
    processes: Math.round(positive('processes', values.processes, availableParallelism())),
    build: !values['no-build'],
    verbose: values.verbose,
    logLevel: values['log-level'],
    tracing: values.tracing,
    ledger: values.ledger,
  };
}
