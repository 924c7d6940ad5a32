import fc from 'fast-check';
import { closeRedis, createRedis } from '../../src/store/redis';
import { redisUrl } from '../support/prefix';
import { commandArbitraries, count, endSession, newModel, openingLaunches, operatorSubject, truthOf, type Model } from './commands';
import { finalViolations, owedAtTerminate, type FinalView, type Kind, type WalletTx } from './money-rules';
import { DEAD_CHECK_WINDOW_MS, openSystem, START_BALANCE, type Connections, type System } from './system';

/**
 * One property over the whole money model: a generated command list runs against the real parts,
 * then the drain lets everything finish (the wallet answers, workers and upkeep run, time passes,
 * every session ends, an operator settles what went dead), then the invariants are checked. A
 * failure throws fast-check's report: the seed, the path, and the shrunk command list with the
 * scheduler's order of wallet events; `--seed S --path P` replays it.
 */
export interface ModelOptions {
  readonly runs: number;
  readonly seed?: number;
  readonly path?: string;
  /** The command list's own replay path (fast-check prints it as replayPath in the counterexample). */
  readonly replayPath?: string;
  readonly maxCommands?: number;
  /** Stop generating after this long (a passing run then reports how many sequences fitted). */
  readonly timeLimitMs?: number;
  /** Called once per generated run with its counts (commands met, races met). */
  readonly onRun?: (stats: ReadonlyMap<string, number>) => void;
}

const DRAIN_ROUNDS = 40;

function walletView(real: System): (id: string) => WalletTx | undefined {
  return (id) => {
    const tx = real.wallet.books.transaction(id);
    return tx && { op: tx.op as Kind, rolledBackBy: tx.rolledBackBy };
  };
}

async function releaseAll(real: System): Promise<void> {
  real.wallet.behaviour = { kind: 'answer' };
  while (await real.release()) await real.settle();
}

/** Everything that may still move money goes on until nothing does. */
async function drain(model: Model, real: System): Promise<void> {
  // One resolution per record the operator acts on: a round-closing debit's compensations end dead
  // again and again (contract 5.9), and the operator does not go round in that circle.
  const resolved = new Set<string>();
  for (let round = 0; round < DRAIN_ROUNDS; round += 1) {
    // Past every retry delay and job lock (a sweep's touch restarts a record's delay).
    real.advance(70_000);
    await releaseAll(real);
    for (const job of await real.jobs()) {
      real.runJob(job);
      await real.settle();
      await releaseAll(real);
    }
    if (round === 2) {
      for (const s of model.sessions) if (!s.ended) endSession(real, s);
      await real.settle();
      await releaseAll(real);
    }
    // Once, past the window a compensated debit is watched in.
    if (round === 6) real.advance(DEAD_CHECK_WINDOW_MS);
    real.sweep();
    await real.settle();
    await releaseAll(real);
    real.deadCheck();
    await real.settle();
    await releaseAll(real);
    const records = await real.records();
    for (const record of records.filter((r) => r.state === 'dead')) {
      // Redriven first (the wallet answers now); what stays dead, the operator resolves from the books.
      if (round < 4) {
        real.redrive(record.transactionId, () => undefined);
      } else {
        const subject = await operatorSubject(real, record);
        const truth = subject === undefined ? undefined : truthOf(real, subject.target, subject.debit);
        const about = subject?.debit?.transactionId ?? record.transactionId;
        if (truth !== undefined && !resolved.has(about)) {
          resolved.add(about);
          count(model, `drain: operator resolve ${truth}`);
          real.resolve(record.transactionId, truth, () => undefined);
        }
      }
      await real.settle();
      await releaseAll(real);
    }
    const settled = records.every((r) => ['succeeded', 'failed', 'compensated'].includes(r.state));
    if (round > 7 && settled && (await real.jobs()).length === 0) return;
  }
}

function finalView(model: Model, real: System, records: Awaited<ReturnType<System['records']>>): FinalView {
  return {
    sent: [...model.sent.values()],
    wallet: walletView(real),
    balanceOf: (player) => real.wallet.books.balanceOf(player),
    records: records.map((r) => ({ id: r.transactionId, kind: r.kind, state: r.state, player: r.playerId, amount: r.amount, reference: r.referenceTransactionId, isCompensation: r.isCompensation, attempts: r.attempts, resolution: r.resolution })),
    tokens: model.tokens.map((t, i) => {
      const sessions = model.sessions.filter((s) => s.token === i);
      return { token: t.token, allEnded: sessions.length > 0 && sessions.every((s) => s.ended), terminates: real.wallet.terminated.get(t.token) ?? 0 };
    }),
    players: model.players,
    startBalance: START_BALANCE,
    callsOf: (op, id) => real.wallet.events.filter((e) => e.op === op && e.transactionId === id && e.behaviour !== 'late-apply').length,
  };
}

/**
 * One sequence: the opening launches, the commands, the drain, the invariants. Throws the broken
 * invariants; returns what the sequence met (commands, races).
 */
export async function runSequence(connections: Connections, scheduler: fc.Scheduler, commands: Iterable<fc.AsyncCommand<Model, System>>): Promise<ReadonlyMap<string, number>> {
  const real = await openSystem(connections, scheduler);
  const model = newModel();
  real.wallet.onTerminate = (token) => model.violations.push(...owedAtTerminate(token, [...model.sent.values()], walletView(real)));
  try {
    await openingLaunches(model, real);
    await fc.asyncModelRun(() => ({ model, real }), commands);
    await drain(model, real);
    const violations = [...model.violations, ...finalViolations(finalView(model, real, await real.records())), ...real.crashes];
    if (violations.length > 0) throw new Error(`money invariants broken:\n  ${violations.join('\n  ')}`);
    return model.stats;
  } finally {
    await real.close();
  }
}

export function moneyProperty(connections: Connections, options: Pick<ModelOptions, 'maxCommands' | 'onRun' | 'replayPath'>) {
  return fc.asyncProperty(fc.scheduler(), fc.commands(commandArbitraries, { maxCommands: options.maxCommands ?? 30, size: 'max', ...(options.replayPath === undefined ? {} : { replayPath: options.replayPath }) }), async (scheduler, commands) => {
    // Not `onRun?.(await …)`: without a hook, optional chaining would skip the sequence itself.
    const met = await runSequence(connections, scheduler, commands);
    options.onRun?.(met);
  });
}

/** The model's connections to the Redis at REDIS_URL, for `use`, closed after. */
export async function withConnections<T>(use: (connections: Connections) => Promise<T>): Promise<T> {
  const connections: Connections = { redis: createRedis(redisUrl()), bullmq: createRedis(redisUrl(), { forBullmq: true }) };
  try {
    return await use(connections);
  } finally {
    await closeRedis(connections.redis);
    await closeRedis(connections.bullmq);
  }
}

/** Runs the property; throws fast-check's report on a failure. */
export async function runModel(options: ModelOptions): Promise<void> {
  await withConnections((connections) =>
    fc.assert(moneyProperty(connections, options), {
      numRuns: options.runs,
      ...(options.seed === undefined ? {} : { seed: options.seed }),
      ...(options.path === undefined ? {} : { path: options.path }),
      endOnFailure: false,
      ...(options.timeLimitMs === undefined ? {} : { interruptAfterTimeLimit: options.timeLimitMs, markInterruptAsFailure: false }),
    }),
  );
}

/** The command that replays a failure fast-check reported (its seed, path and the command list's replayPath). */
export function replayHint(err: Error): string {
  const seed = /seed: (-?\d+)/.exec(err.message)?.[1];
  const path = /path: "([^"]*)"/.exec(err.message)?.[1];
  const replayPath = /replayPath="([^"]*)"/.exec(err.message)?.[1];
  if (seed === undefined || path === undefined) return '';
  return `replay: npm run model -- --runs 1 --seed ${seed} --path "${path}"${replayPath === undefined ? '' : ` --replay-path "${replayPath}"`}`;
}
