import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { LoadResult } from './load';
import type { BenchOptions } from './options';
import type { AllocationSummary, ProfileSummary } from './profile';
import type { StallReport } from './stalls';

/** Everything one run measured, as written to bench/results/<date>-<sha>.json. */
export interface BenchReport {
  date: string;
  git: { sha: string; dirty: boolean };
  machine: { cpus: number; node: string; loadAverageAtStart: number[] };
  options: BenchOptions;
  /** Keyed like 'direct.debit', 'gateway.bet@8', 'gateway.bet.h1tls', 'gateway.bet.h2'. */
  cases: Record<string, CaseResult>;
  /** Peak established connections at the simulator during the gateway bet cases: plain HTTP/1.1, HTTP/1.1 over TLS, HTTP/2 over TLS. */
  walletConnections: { http1?: number; http1Tls?: number; http2?: number };
  /** The fixed arrival rate of the `@25%` latency cases: that share of reference.bet's req/s. */
  fixedRate?: { share: number; rps: number };
  /** Retries through one worker process, and the same backlog through two at once. */
  worker?: WorkerResult;
  workerPair?: WorkerResult;
  /** `--ledger`: bets with the ledger off and on, alternating slices. */
  ledger?: LedgerResult;
  /** The fixed-rate case's requests over 250 ms, each with what it met (GC, a blocked loop, Redis, the box). */
  stalls?: StallReport;
  memory: {
    gatewayRssBeforeMiB?: { pid: number; mib: number }[];
    gatewayRssAfterMiB?: { pid: number; mib: number }[];
    gatewayRequestsServed?: number;
    redisBytesPerRecord?: {
      usedMemoryDelta: number;
      records: number;
      perRecord: number;
      sampledTxKeyBytes: number | null;
      /** `MEMORY USAGE` of every key of the gateway's prefix, by kind, after the bet and win cases. */
      byKind?: Record<string, { keys: number; bytes: number }>;
    };
    /** --endurance: RSS of every gateway process after each tenth of the requests. */
    endurance?: { requests: number; seconds: number; errors: number; samples: { requests: number; rssMiB: { pid: number; mib: number }[] }[] };
  };
  /** `--profile`: the gateway's CPU profile over the measured bet load, and the reference server's over the same load. */
  profile?: ProfileSummary | { error: string };
  referenceProfile?: ProfileSummary;
  /** `--alloc`: bytes the gateway allocates per bet. */
  allocation?: AllocationSummary;
  referenceAllocation?: AllocationSummary;
  /** Cases not run, and why. */
  skipped: string[];
  derived?: Derived;
}

/**
 * A load's result and the CPU time the server under test (the simulator, the reference server or
 * the gateway, every process of it) spent per answered request during the measured run: steadier
 * than req/s on a shared box, where other processes take turns on the same cores.
 */
export type CaseResult = LoadResult & {
  readonly serverCpuUsPerRequest: number | null;
  /** The simulator's CPU per request when it sits behind the server under test (null for the direct cases). */
  readonly walletCpuUsPerRequest: number | null;
  /**
   * The rest of the box per answered request: the server's kernel share (of serverCpuUsPerRequest),
   * the bench's Redis and the bench process itself (the load generator). On a box whose cores are
   * all busy, req/s of two cases compare as the inverse of their box totals.
   */
  readonly boxCpuUsPerRequest?: BoxCpu;
  /** System calls per answered request (/proc/<pid>/io, every process of it), for the HTTP/2 question. */
  readonly serverIo?: CaseIo | null;
  readonly walletIo?: CaseIo | null;
  /** A case run in alternating slices against another: each slice's own figures, in the order they ran. */
  readonly slices?: readonly SliceResult[];
};

/** One slice of a case measured in alternating slices: the n-th slice of each case ran back to back. */
export interface SliceResult {
  readonly requests: number;
  readonly rps: number;
  readonly serverCpuUsPerRequest: number | null;
  /** The Redis the server uses (for the reference server, its own). */
  readonly redisCpuUsPerRequest: number | null;
}

export interface BoxCpu {
  readonly serverSystem: number | null;
  readonly redis: number | null;
  readonly loadGenerator: number | null;
}

/**
 * Read and write system calls per request and bytes per write of one process tree during a case.
 * Sockets, pipes and files alike (a gateway's count holds its engine answers, its Redis commands,
 * its wallet requests and its batched log writes); over TLS one write is one or more TLS records.
 */
export interface CaseIo {
  readonly readsPerRequest: number;
  readonly writesPerRequest: number;
  readonly bytesPerWrite: number;
}

export interface WorkerResult {
  /** Worker processes draining the backlog together. */
  processes: number;
  jobs: number;
  /** Wins answered 202 pending (the first credit failed as armed). */
  queued: number;
  /** Credit calls after each transaction's first, at the simulator. */
  retries: number;
  retriesSucceeded: number;
  /** First to last retry call: the worker's steady rate. */
  jobsPerSecond: number;
  /** Worker process start to the last retry, startup included. */
  endToEndSeconds: number;
  stillPending: number;
  /** The worker process's CPU per retry from its first finished retry to the drained backlog (its start left out). */
  workerCpuUsPerRetry?: number | null;
  retryDelayUnit: 'ms';
}

/** One side of the ledger's A/B: per bet answered in its slices. */
export interface LedgerSide {
  bets: number;
  rps: number;
  /** The gateway's processes: the money path. */
  gatewayCpuUsPerBet: number | null;
  /** Redis while the bets ran. */
  redisCpuUsPerBet: number | null;
  /** Redis until the slice's outbox was drained: the bets and the worker's drain together. */
  redisCpuUsPerBetWithDrain: number | null;
  /** Its worker (with the ledger: the drain into PostgreSQL). */
  workerCpuUsPerBet: number | null;
}

export interface LedgerResult {
  database: string;
  slices: number;
  /** Longest the ledger side's outbox got at the end of a slice. */
  outboxPeakEntries: number;
  /** Saturated: as many bets as each side carries. */
  off: LedgerSide;
  on: LedgerSide;
  /** Both sides at one fixed rate (half the saturated rate without a ledger): the money path's CPU per bet at equal load. */
  paced?: { rps: number; off: LedgerSide; on: LedgerSide };
}

/** CPU per request of the gateway's processes and of Redis beside the reference's, one operation. */
export interface CpuVsReference {
  gatewayServer: number | null;
  referenceServer: number | null;
  server: number | null;
  gatewayRedis: number | null;
  referenceRedis: number | null;
  redis: number | null;
  /** req/s, gateway over reference. */
  throughput: number | null;
  /** The same three ratios in each pair of slices that ran back to back: the lowest and the highest (null without slices). */
  spread: { server: Spread | null; redis: Spread | null; throughput: Spread | null };
}

export interface Spread {
  min: number;
  max: number;
}

interface Target {
  name: string;
  value: number | null;
  target: string;
  met: boolean | null;
}

interface Derived {
  /** Contract section 7: CPU per request of the server and of Redis, gateway beside the reference of the same run. */
  cpuVsReference: Record<'balance' | 'bet' | 'win', CpuVsReference>;
  ratios: Record<string, number | null>;
  addedLatencyMs: Record<string, number | null>;
  targets: Target[];
}

const rps = (r: BenchReport, key: string): number | undefined => r.cases[key]?.rps;
const ratio = (a: number | undefined, b: number | undefined): number | null =>
  a === undefined || b === undefined || b === 0 ? null : Math.round((a / b) * 100) / 100;
const diff = (a: number | undefined, b: number | undefined): number | null =>
  a === undefined || b === undefined ? null : Math.round((a - b) * 100) / 100;

function atLeast(name: string, value: number | null, min: number, text: string): Target {
  return { name, value, target: text, met: value === null ? null : value >= min };
}

function atMost(name: string, value: number | null, max: number, text: string): Target {
  return { name, value, target: text, met: value === null ? null : value <= max };
}

/** The lowest and highest ratio of the n-th slice of `a` to the n-th slice of `b` (slices that ran back to back). */
function spread(a: CaseResult | undefined, b: CaseResult | undefined, pick: (s: SliceResult) => number | null): Spread | null {
  const bs = b?.slices ?? [];
  const ratios = (a?.slices ?? []).flatMap((slice, i) => {
    const other = bs[i];
    const x = pick(slice);
    const y = other === undefined ? null : pick(other);
    return x === null || y === null || y === 0 ? [] : [x / y];
  });
  const round = (v: number): number => Math.round(v * 100) / 100;
  return ratios.length === 0 ? null : { min: round(Math.min(...ratios)), max: round(Math.max(...ratios)) };
}

/** Gateway beside reference for one operation, both measured in the same alternating slices. */
function cpuVsReference(r: BenchReport, op: 'balance' | 'bet' | 'win'): CpuVsReference {
  const gw = r.cases[`gateway.${op}`];
  const ref = r.cases[`reference.${op}`];
  return {
    gatewayServer: gw?.serverCpuUsPerRequest ?? null,
    referenceServer: ref?.serverCpuUsPerRequest ?? null,
    server: ratio(gw?.serverCpuUsPerRequest ?? undefined, ref?.serverCpuUsPerRequest ?? undefined),
    gatewayRedis: gw?.boxCpuUsPerRequest?.redis ?? null,
    referenceRedis: ref?.boxCpuUsPerRequest?.redis ?? null,
    redis: ratio(gw?.boxCpuUsPerRequest?.redis ?? undefined, ref?.boxCpuUsPerRequest?.redis ?? undefined),
    throughput: ratio(gw?.rps, ref?.rps),
    spread: {
      server: spread(gw, ref, (s) => s.serverCpuUsPerRequest),
      redis: spread(gw, ref, (s) => s.redisCpuUsPerRequest),
      throughput: spread(gw, ref, (s) => s.rps),
    },
  };
}

export function derive(r: BenchReport): Derived {
  const ref = rps(r, 'reference.bet');
  const cpu = {
    balance: cpuVsReference(r, 'balance'),
    bet: cpuVsReference(r, 'bet'),
    win: cpuVsReference(r, 'win'),
  };
  const walletCpu = (key: string): number | undefined => r.cases[key]?.walletCpuUsPerRequest ?? undefined;
  const ratios = {
    'gateway.win / reference.win': ratio(rps(r, 'gateway.win'), rps(r, 'reference.win')),
    'gateway.balance / reference.bet': ratio(rps(r, 'gateway.balance'), ref),
    'gateway.bet / reference.bet': ratio(rps(r, 'gateway.bet'), ref),
    'gateway.win / reference.bet': ratio(rps(r, 'gateway.win'), ref),
    'gateway.balance / direct.balance': ratio(rps(r, 'gateway.balance'), rps(r, 'direct.balance')),
    // The bare pass-through's balance against the wallet's own: the most any gateway's balance can reach on this box.
    'reference.balance / direct.balance': ratio(rps(r, 'reference.balance'), rps(r, 'direct.balance')),
    'gateway.balance / reference.balance': ratio(rps(r, 'gateway.balance'), rps(r, 'reference.balance')),
    'gateway.bet / direct.debit': ratio(rps(r, 'gateway.bet'), rps(r, 'direct.debit')),
    'gateway.win / direct.credit': ratio(rps(r, 'gateway.win'), rps(r, 'direct.credit')),
    'reference.bet / direct.debit': ratio(ref, rps(r, 'direct.debit')),
    'gateway.bet.h1tls / gateway.bet': ratio(rps(r, 'gateway.bet.h1tls'), rps(r, 'gateway.bet')),
    'gateway.bet.h2 / gateway.bet.h1tls': ratio(rps(r, 'gateway.bet.h2'), rps(r, 'gateway.bet.h1tls')),
    'gateway.bet.h2 / gateway.bet': ratio(rps(r, 'gateway.bet.h2'), rps(r, 'gateway.bet')),
    // The simulator's CPU per bet, HTTP/2 over HTTP/1.1 with TLS: the wallet side of the HTTP/2 question.
    'wallet CPU per bet, h2 / h1tls': ratio(walletCpu('gateway.bet.h2'), walletCpu('gateway.bet.h1tls')),
  };
  const c = r.cases;
  const low = r.options.lowConnections;
  const added = {
    'balance p99': diff(c['gateway.balance']?.p99, c['direct.balance']?.p99),
    'bet p99': diff(c['gateway.bet']?.p99, c['direct.debit']?.p99),
    'win p99': diff(c['gateway.win']?.p99, c['direct.credit']?.p99),
    'bet p50': diff(c['gateway.bet']?.p50, c['direct.debit']?.p50),
    [`bet p50 @${low}`]: diff(c[`gateway.bet@${low}`]?.p50, c[`direct.debit@${low}`]?.p50),
    [`bet p99 @${low}`]: diff(c[`gateway.bet@${low}`]?.p99, c[`direct.debit@${low}`]?.p99),
    'bet p50 over reference, fixed rate': diff(c['gateway.bet@25%']?.p50, c['reference.bet@25%']?.p50),
    'bet p99 over reference, fixed rate': diff(c['gateway.bet@25%']?.p99, c['reference.bet@25%']?.p99),
  };

  // HTTP/2 against HTTP/1.1 with the same TLS cost on both; plain-text HTTP/1.1 stays a ratio above.
  const h1 = rps(r, 'gateway.bet.h1tls');
  const h2 = rps(r, 'gateway.bet.h2');
  const { http1Tls, http2 } = r.walletConnections;
  const largest = (list: { mib: number }[] | undefined): number | null => (list === undefined || list.length === 0 ? null : Math.max(...list.map((p) => p.mib)));
  const endurance = r.memory.endurance;
  const enduranceEnd = endurance?.samples[endurance.samples.length - 1];
  const fixed = c['gateway.bet@25%'];
  const one = r.worker;
  const two = r.workerPair;
  // Judged at equal load where it ran: saturated, the side that serves fewer bets pays more per bet for it.
  const ledgerPair = r.ledger?.paced ?? r.ledger;
  const ledgerCpu = ledgerPair === undefined ? null : ratio(ledgerPair.on.gatewayCpuUsPerBet ?? undefined, ledgerPair.off.gatewayCpuUsPerBet ?? undefined);
  const targets: Target[] = [
    atMost('gateway server CPU per bet / reference', cpu.bet.server, 1.5, '≤ 1.5'),
    atMost('gateway server CPU per balance / reference', cpu.balance.server, 1.5, '≤ 1.5'),
    atMost('Redis CPU per bet, gateway / reference', cpu.bet.redis, 2.5, '≤ 2.5'),
    atMost('Redis CPU per balance, gateway / reference', cpu.balance.redis, 1.5, '≤ 1.5'),
    atLeast('gateway bet / reference bet, req/s', ratios['gateway.bet / reference.bet'], 0.75, '≥ 0.75'),
    atLeast('gateway balance / reference balance, req/s', ratios['gateway.balance / reference.balance'], 0.75, '≥ 0.75'),
    atMost(`slowest bet at ${r.fixedRate?.rps ?? '?'} req/s (ms)`, fixed?.max ?? null, 250, '≤ 250'),
    atMost(`bet p50 over reference at ${r.fixedRate?.rps ?? '?'} req/s (ms)`, added['bet p50 over reference, fixed rate'] ?? null, 1, '≤ 1'),
    atMost(`bet p99 over reference at ${r.fixedRate?.rps ?? '?'} req/s (ms)`, added['bet p99 over reference, fixed rate'] ?? null, 5, '≤ 5'),
    {
      name: 'HTTP/2 bet rps ≥ HTTP/1.1 over TLS, fewer wallet connections',
      value: ratios['gateway.bet.h2 / gateway.bet.h1tls'],
      target: `≥ 1.00 and ${http2 ?? '?'} < ${http1Tls ?? '?'} conns`,
      met: h1 === undefined || h2 === undefined || http1Tls === undefined || http2 === undefined ? null : h2 >= h1 && http2 < http1Tls,
    },
    atMost('worker CPU per retry (µs)', one?.workerCpuUsPerRetry ?? null, 800, '≤ 800'),
    atLeast(`retry jobs/s, two workers / one (${r.machine.cpus} cores)`, ratio(two?.jobsPerSecond, one?.jobsPerSecond), 1.7, r.machine.cpus > 2 ? '≥ 1.7' : '≥ 1.7 (needs > 2 cores)'),
    atMost(`gateway CPU per bet, ledger on / off${r.ledger?.paced ? ` at ${r.ledger.paced.rps} bets/s` : ''}`, ledgerCpu, 1.1, '≤ 1.10'),
    enduranceEnd === undefined
      ? atMost('gateway RSS after the load, largest process (MiB)', largest(r.memory.gatewayRssAfterMiB), 200, '≤ 200')
      : atMost(`gateway RSS after ${enduranceEnd.requests} requests, largest process (MiB)`, largest(enduranceEnd.rssMiB), 200, '≤ 200'),
    atMost('Redis bytes per retained transaction record', r.memory.redisBytesPerRecord?.perRecord ?? null, 1024, '≤ 1024'),
  ];
  return { cpuVsReference: cpu, ratios, addedLatencyMs: added, targets };
}

function pad(text: string, width: number, right = false): string {
  return right ? text.padStart(width) : text.padEnd(width);
}

const NUMERIC = /^(-?[\d.]+|n\/a)$/;

/** Plain-text table; a column of numbers is right-aligned, header included. */
function table(header: string[], rows: string[][]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((row) => (row[i] ?? '').length)));
  const numeric = header.map((_, i) => rows.length > 0 && rows.every((row) => NUMERIC.test(row[i] ?? '')));
  const line = (cells: string[]): string => cells.map((cell, i) => pad(cell, widths[i] ?? 0, numeric[i] === true)).join('  ').trimEnd();
  return [line(header), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.map(line)].join('\n');
}

const show = (v: number | null | undefined, digits = 2): string => (v === null || v === undefined ? 'n/a' : String(Number(v.toFixed(digits))));

export function render(r: BenchReport): string {
  const d = r.derived ?? derive(r);
  const out: string[] = [];
  out.push(
    `wallet gateway bench — ${r.date}, git ${r.git.sha}${r.git.dirty ? ' (dirty tree)' : ''}, ${r.machine.cpus} cores, node ${r.machine.node}, ` +
      `load average at start ${r.machine.loadAverageAtStart.map((l) => l.toFixed(2)).join(' ')}`,
  );
  out.push(`${r.options.connections} connections, ${r.options.duration} s per case, ${r.options.processes} gateway/reference processes${r.options.quick ? ', QUICK' : ''}${r.options.tracing ? ', TRACING ON (gateway and worker, every request sampled, OTLP http/protobuf to a sink)' : ''}`);
  out.push('');
  out.push(
    table(
      ['case', 'conns', 'req/s', 'p50 ms', 'p99 ms', 'max ms', 'errors', 'requests', 'server CPU µs/req', 'wallet CPU µs/req'],
      Object.entries(r.cases).map(([name, c]) => [
        name,
        String(c.connections),
        String(c.rps),
        show(c.p50),
        show(c.p99),
        show(c.max),
        String(c.errors),
        String(c.requests),
        show(c.serverCpuUsPerRequest ?? null, 0),
        c.walletCpuUsPerRequest === null || c.walletCpuUsPerRequest === undefined ? '-' : show(c.walletCpuUsPerRequest, 0),
      ]),
    ),
  );
  out.push('');
  const slices = r.cases['gateway.bet']?.slices?.length;
  out.push(
    'CPU µs per request, gateway beside the reference pass-through of this run' +
      `${slices === undefined ? '' : `, both running, in ${slices} alternating slices each`} (server: every process of it; Redis: its own redis-server);` +
      ' spread: the lowest and highest ratio of one slice pair',
  );
  const range = (s: Spread | null): string => (s === null ? 'n/a' : `${show(s.min)}–${show(s.max)}`);
  out.push(
    table(
      ['request', 'server gw', 'server ref', 'server ×', 'spread', 'Redis gw', 'Redis ref', 'Redis ×', 'spread', 'req/s ×', 'spread'],
      (['balance', 'bet', 'win'] as const).map((op) => {
        const x = d.cpuVsReference[op];
        return [
          op,
          show(x.gatewayServer, 0),
          show(x.referenceServer, 0),
          show(x.server),
          range(x.spread.server),
          show(x.gatewayRedis, 0),
          show(x.referenceRedis, 0),
          show(x.redis),
          range(x.spread.redis),
          show(x.throughput),
          range(x.spread.throughput),
        ];
      }),
    ),
  );
  out.push('targets: server × ≤ 1.5 (bet, balance); Redis × ≤ 2.5 (bet), ≤ 1.5 (balance); req/s × ≥ 0.75 (bet, balance), reported: CPU is the figure held');
  out.push('');
  out.push(table(['ratio', 'value'], Object.entries(d.ratios).map(([k, v]) => [k, show(v)])));
  out.push('');
  out.push(table(['gateway latency added (over direct; fixed rate: over the reference)', 'ms'], Object.entries(d.addedLatencyMs).map(([k, v]) => [k, show(v)])));
  out.push('');
  const other: string[][] = [];
  other.push(['wallet connections, HTTP/1.1 (peak at the sim)', show(r.walletConnections.http1, 0)]);
  other.push(['wallet connections, HTTP/1.1 over TLS (peak at the sim)', show(r.walletConnections.http1Tls, 0)]);
  other.push(['wallet connections, HTTP/2 over TLS (peak at the sim)', show(r.walletConnections.http2, 0)]);
  for (const w of [r.worker, r.workerPair]) {
    if (w === undefined) continue;
    const who = w.processes === 1 ? 'one worker' : `${w.processes} workers`;
    other.push([`retry jobs/s (${who}, ${w.retries} retries, first→last retry)`, show(w.jobsPerSecond, 0)]);
    other.push([`retry backlog drained, start → last retry, ${who} (s)`, show(w.endToEndSeconds)]);
    other.push([`worker CPU per retry, µs (${who}, after the start)`, show(w.workerCpuUsPerRetry, 0)]);
    if (w.stillPending > 0) other.push([`records still pending at the deadline (${who})`, String(w.stillPending)]);
  }
  const sum = (list: { mib: number }[] | undefined): number | undefined => list?.reduce((n, p) => n + p.mib, 0);
  other.push(['gateway RSS before, MiB (per process)', r.memory.gatewayRssBeforeMiB?.map((p) => p.mib).join(' + ') ?? 'n/a']);
  other.push([`gateway RSS after ${r.memory.gatewayRequestsServed ?? '?'} requests, MiB (per process)`, r.memory.gatewayRssAfterMiB?.map((p) => p.mib).join(' + ') ?? 'n/a']);
  other.push(['gateway RSS after, MiB (all processes)', show(sum(r.memory.gatewayRssAfterMiB), 1)]);
  const endurance = r.memory.endurance;
  if (endurance) {
    other.push([`endurance: ${endurance.requests} requests in ${endurance.seconds} s, errors`, String(endurance.errors)]);
    for (const sample of endurance.samples) {
      other.push([`  gateway RSS after ${sample.requests} requests, MiB (per process)`, sample.rssMiB.map((p) => p.mib).join(' + ')]);
    }
  }
  const redis = r.memory.redisBytesPerRecord;
  if (redis) {
    other.push([`Redis bytes per record (used_memory delta / ${redis.records} records)`, show(redis.perRecord, 0)]);
    other.push(['Redis bytes per tx key (MEMORY USAGE, sampled)', show(redis.sampledTxKeyBytes, 0)]);
    const kinds = Object.entries(redis.byKind ?? {}).sort(([, a], [, b]) => b.bytes - a.bytes);
    for (const [kind, { keys, bytes }] of kinds.slice(0, 4)) {
      other.push([`  of which ${kind} keys (${keys}, MEMORY USAGE) per record`, show(redis.records === 0 ? null : bytes / redis.records, 0)]);
    }
  }
  out.push(table(['other', 'value'], other));
  out.push('');
  out.push(
    table(
      ['target', 'value', 'wanted', 'result'],
      d.targets.map((t) => [t.name, show(t.value), t.target, t.met === null ? 'not measured' : t.met ? 'met' : 'MISSED']),
    ),
  );
  if (r.stalls) out.push('', ...renderStalls(r.stalls, r.cases['gateway.bet@25%']?.max));
  if (r.ledger) out.push('', ...renderLedger(r.ledger));
  const ioCases = Object.entries(r.cases).filter(([name, c]) => /^gateway\.bet(\.|$)/.test(name) && c.serverIo);
  if (ioCases.length > 0) {
    out.push('');
    const cell = (io: CaseIo | null | undefined, key: keyof CaseIo): string => (io ? show(io[key], 2) : 'n/a');
    out.push(
      table(
        ['system calls per bet (/proc/<pid>/io)', 'gateway writes', 'gateway reads', 'gateway B/write', 'wallet writes', 'wallet reads', 'wallet B/write'],
        ioCases.map(([name, c]) => [
          name,
          cell(c.serverIo, 'writesPerRequest'),
          cell(c.serverIo, 'readsPerRequest'),
          cell(c.serverIo, 'bytesPerWrite'),
          cell(c.walletIo, 'writesPerRequest'),
          cell(c.walletIo, 'readsPerRequest'),
          cell(c.walletIo, 'bytesPerWrite'),
        ]),
      ),
    );
  }
  const boxCases = Object.entries(r.cases).filter(([, c]) => c.boxCpuUsPerRequest !== undefined);
  if (boxCases.length > 0) {
    out.push('');
    out.push(
      table(
        ['CPU µs per request across the box', 'server', 'of which kernel', 'wallet', 'Redis', 'load generator', 'box total'],
        boxCases.map(([name, c]) => {
          const box = c.boxCpuUsPerRequest as BoxCpu;
          // A direct case's server is the wallet: no wallet column to add.
          const known = [c.serverCpuUsPerRequest, box.redis, box.loadGenerator];
          const total = known.some((p) => p === null) ? null : known.reduce<number>((n, p) => n + (p as number), c.walletCpuUsPerRequest ?? 0);
          return [name, show(c.serverCpuUsPerRequest, 0), show(box.serverSystem, 0), c.walletCpuUsPerRequest === null ? '-' : show(c.walletCpuUsPerRequest, 0), show(box.redis, 0), show(box.loadGenerator, 0), show(total, 0)];
        }),
      ),
    );
  }
  if (r.profile) {
    out.push('');
    if ('error' in r.profile) {
      out.push(`CPU profile: ${r.profile.error}`);
    } else {
      out.push(...renderProfiles(r.profile, r.referenceProfile));
    }
  }
  if (r.allocation) {
    const a = r.allocation;
    const reference = r.referenceAllocation === undefined ? '' : `, the reference server ${kib(r.referenceAllocation.bytesPerRequest)} KiB (${r.referenceAllocation.requests} bets)`;
    out.push('');
    out.push(`allocated per bet, every process together: the gateway ${kib(a.bytesPerRequest)} KiB (${a.requests} bets)${reference}; the gateway's largest, self bytes:`);
    out.push(table(['bytes/bet', 'function', 'where'], a.top.map((f) => [String(f.bytesPerRequest), f.name, f.location])));
    out.push('');
    out.push('the same by where the code lives:');
    out.push(table(['bytes/bet', 'area'], a.areas.map((x) => [String(x.bytesPerRequest), x.area])));
  }
  if (r.skipped.length > 0) {
    out.push('');
    out.push('not run:');
    for (const s of r.skipped) out.push(`  - ${s}`);
  }
  return out.join('\n');
}

const kib = (bytes: number): string => (bytes / 1024).toFixed(1);

/** The fixed-rate case's slow requests and what each met. */
function renderStalls(st: StallReport, max: number | undefined): string[] {
  const gc = Object.entries(st.gatewayGc)
    .map(([kind, t]) => `${kind} ${t.count} × (${t.ms} ms, max ${t.maxMs})`)
    .join(', ');
  const out = [
    `fixed-rate bet: max ${show(max)} ms; ${st.slow.length} request(s) over ${st.thresholdMs} ms` +
      (st.slow.length === 0 ? '' : ` (${Object.entries(st.byCause).map(([c, n]) => `${n} ${c}`).join(', ')})`),
    `  during the case: gateway loop stalls ≥ 50 ms ${st.gatewayLoopStalls} (largest ${st.gatewayMaxLoopDelayMs} ms), longest gateway GC pause ${st.gatewayLongestGcMs} ms, ` +
      `load generator loop delay max ${st.benchMaxLoopDelayMs} ms, box busiest 100 ms ${Math.round(st.boxMaxBusy * 100)}%, ` +
      `Redis slow commands ${st.redis.slowCommands.length}, latency events ${st.redis.latencyEvents.length}`,
    `  gateway GC over the whole run (all processes): ${gc || 'none seen'}`,
  ];
  for (const r of st.slow.slice(0, 10)) out.push(`  ${show(r.ms, 0)} ms at ${new Date(r.at).toISOString().slice(11, 23)}: ${r.cause} — ${r.evidence}`);
  if (st.slow.length > 10) out.push(`  … ${st.slow.length - 10} more in the JSON (stalls.slow)`);
  return out;
}

/** The ledger's A/B: the money path and Redis per bet, off against on, saturated and at one fixed rate. */
function renderLedger(l: LedgerResult): string[] {
  const pairs: [string, LedgerSide, LedgerSide][] = [['saturated', l.off, l.on]];
  if (l.paced) pairs.push([`${l.paced.rps}/s`, l.paced.off, l.paced.on]);
  const rows: string[][] = [];
  const row = (load: string, name: string, off: number | null, on: number | null): void => {
    const change = off === null || on === null || off === 0 ? null : ((on - off) / off) * 100;
    rows.push([load, name, show(off, 0), show(on, 0), off === null || on === null ? 'n/a' : show(on - off, 0), change === null ? 'n/a' : `${change >= 0 ? '+' : ''}${change.toFixed(1)}%`]);
  };
  for (const [load, off, on] of pairs) {
    row(load, 'gateway CPU (the money path; bound +10%)', off.gatewayCpuUsPerBet, on.gatewayCpuUsPerBet);
    row(load, 'Redis CPU while betting', off.redisCpuUsPerBet, on.redisCpuUsPerBet);
    row(load, "Redis CPU, outbox drained (the outbox's cost)", off.redisCpuUsPerBetWithDrain, on.redisCpuUsPerBetWithDrain);
    row(load, 'worker CPU (the drain into PostgreSQL)', off.workerCpuUsPerBet, on.workerCpuUsPerBet);
    row(load, 'bets/s', off.rps, on.rps);
  }
  return [
    `the ledger off and on, bets in ${l.slices} alternating slices per load (${l.database}; outbox at most ${l.outboxPeakEntries} entries at a slice's end):`,
    table(['load', 'per bet (µs)', 'off', 'on', 'on − off', 'change'], rows),
  ];
}

/** µs of busy CPU per request, from a profile's milliseconds. */
const perRequestUs = (ms: number, p: ProfileSummary): number | null => (p.requests === 0 ? null : (ms * 1000) / p.requests);

/** The gateway's hottest functions, then its busy time per bet by area beside the reference server's. */
function renderProfiles(gateway: ProfileSummary, reference: ProfileSummary | undefined): string[] {
  const out: string[] = [];
  const busy = (p: ProfileSummary): string => `${show(perRequestUs(p.busyMs, p), 0)} µs busy per bet (${p.files} processes, ${p.requests} bets)`;
  out.push(`CPU profile over the measured bet load: the gateway ${busy(gateway)}${reference === undefined ? '' : `, the reference server ${busy(reference)}`}`);
  out.push("the gateway's top self time:");
  out.push(table(['µs/bet', '%', 'function', 'where'], gateway.top.map((f) => [show(perRequestUs(f.selfMs, gateway), 1), show(f.percent, 1), f.name, f.location])));
  out.push('');
  const refAreas = new Map((reference?.areas ?? []).map((a) => [a.area, a.selfMs]));
  const gwAreas = new Map(gateway.areas.map((a) => [a.area, a.selfMs]));
  const names = [...new Set([...gwAreas.keys(), ...refAreas.keys()])];
  const gw = (area: string): number => perRequestUs(gwAreas.get(area) ?? 0, gateway) ?? 0;
  const ref = (area: string): number | null => (reference === undefined ? null : perRequestUs(refAreas.get(area) ?? 0, reference));
  out.push('self time per bet by where the code lives (µs):');
  out.push(
    table(
      ['area', 'gateway', 'reference', 'gateway − reference'],
      names
        .sort((a, b) => gw(b) - gw(a) || (ref(b) ?? 0) - (ref(a) ?? 0))
        .map((area) => {
          const r = ref(area);
          return [area, show(gw(area), 1), show(r, 1), r === null ? 'n/a' : show(gw(area) - r, 1)];
        }),
    ),
  );
  return out;
}

export function writeReport(r: BenchReport, dir: string): string {
  mkdirSync(dir, { recursive: true });
  const file = join(dir, `${r.date.replace(/[:.]/g, '-')}-${r.git.sha}${r.options.tracing ? '-tracing' : ''}${r.options.ledger ? '-ledger' : ''}.json`);
  writeFileSync(file, `${JSON.stringify(r, null, 2)}\n`);
  return file;
}
