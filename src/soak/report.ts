import { closingLine, COUNTED, type Finding, type Reconciliation } from './checker';
import type { SchedulerCounts } from './faults';
import type { Interleaving, InterleavingKind } from './history';
import type { ScriptCounts } from './script';

/**
 * The printed reconciliation of the demo and the soak. Everything but the last line is for
 * people; the last line is exactly `lost: N, doubled: N, drift: N`.
 */
export interface ReportInput {
  readonly title: string;
  readonly seed: number;
  readonly parameters: Readonly<Record<string, string | number | boolean>>;
  readonly script: ScriptCounts;
  readonly interleavings: readonly Interleaving[];
  readonly resends: number;
  /** Wallet calls per fault the simulator injected (chaos and armed), from its call log. */
  readonly walletFaults: Readonly<Record<string, number>>;
  readonly faultsMet: WalletFaultsMet;
  readonly scheduler: SchedulerCounts | undefined;
  readonly reconciliation: Reconciliation;
  readonly perPlayer: boolean;
  readonly settledInMs: number;
  /** Sentinel runs: `killed → promoted` for every primary kill. */
  readonly failovers?: readonly string[];
}

/** The new faults as the wallet met them (from its call log), and what the run arranged for the `end` interleavings. */
export interface WalletFaultsMet {
  /** Debits held by a delay fault. */
  readonly lateDebits: number;
  /** Of those, the ones applied at the end of the delay (after the gateway gave up)... */
  readonly lateDebitsApplied: number;
  /** ...and the others by what the wallet said at the end of the delay (e.g. the token was terminated by then). */
  readonly lateDebitsRefused: Readonly<Record<string, number>>;
  /** Terminate calls that met an armed fault (a retry code, a reset, an applied call whose answer was lost). */
  readonly terminateFaults: number;
  /** Wins refused a few times with a retry code so the engine got 202 before its `end`. */
  readonly heldWins: number;
  /** Terminates slowed down so a win racing the `end` meets them at the wallet. */
  readonly slowTerminates: number;
  /** Bets held at the wallet so their win is sent before their answer. */
  readonly slowBets: number;
  /** Bets applied with the answer lost whose compensation the wallet refuses for good (for the operator). */
  readonly deadCompensations: number;
}

const ALL_COUNTED = new Set([...COUNTED.lost, ...COUNTED.doubled, ...COUNTED.drift]);
const INTERLEAVINGS: readonly InterleavingKind[] = [
  'end-while-win-pending',
  'end-while-win-in-flight',
  'end-older-session',
  'foreign-refund',
  'win-before-bet-answer',
  'refund-win-pair',
  'relaunch-repeat',
  'operator-resolution',
  'currency-relaunch',
  'worker-paused-past-lock',
];

function kv(record: Readonly<Record<string, string | number | boolean>>): string {
  const entries = Object.entries(record);
  return entries.length === 0 ? 'none' : entries.map(([k, v]) => `${k} ${v}`).join(', ');
}

function findingLine(f: Finding): string {
  const where = [f.playerId === null ? undefined : `player ${f.playerId}`, f.transactionId === null ? undefined : `tx ${f.transactionId}`].filter(Boolean).join(' ');
  return `  ${ALL_COUNTED.has(f.kind) ? '!' : '-'} ${f.kind}: ${where}: ${f.detail}`;
}

export function renderReport(r: ReportInput): string[] {
  const rec = r.reconciliation;
  const s = r.script;
  const lines: string[] = [];
  lines.push(`== ${r.title} ==`);
  lines.push(`seed: ${r.seed}`);
  lines.push(`parameters: ${kv(r.parameters)}`);
  lines.push(
    `engine: rounds ${s.rounds}, bets ${s.bets}, wins ${s.wins}, refunds ${s.refunds}, duplicates ${s.duplicates}, concurrent rounds ${s.concurrentRounds}, ` +
      `resends ${r.resends}, launches ${s.launches} (relaunches ${s.relaunches}, failed ${s.launchFailures}, sends unanswered ${s.launchesUnanswered}), sessions ended ${s.sessionsEnded} ` +
      `(${s.sessionsEndPending} answered 202, ${s.olderSessionsEnded} older sessions), tokens terminated ${rec.tokens.terminated} of ${rec.tokens.total}, bets after end ${s.endedSessionBets}, ` +
      `repeats through a relaunch ${s.relaunchRepeats}`,
  );
  lines.push(`interleavings met: ${INTERLEAVINGS.map((k) => `${k} ${r.interleavings.filter((i) => i.kind === k).length}`).join(', ')}`);
  for (const kind of INTERLEAVINGS) {
    const outcomes = new Map<string, number>();
    for (const i of r.interleavings) if (i.kind === kind) outcomes.set(i.outcome, (outcomes.get(i.outcome) ?? 0) + 1);
    if (outcomes.size > 0) lines.push(`  ${kind}: ${[...outcomes].sort((a, b) => b[1] - a[1]).map(([outcome, n]) => `${outcome} ×${n}`).join('; ')}`);
  }
  const m = r.faultsMet;
  const armed = r.scheduler?.walletFaults;
  lines.push(
    `late debits: armed ${armed?.['late-debit'] ?? 0}, met ${m.lateDebits}, applied late ${m.lateDebitsApplied}, not applied: ${kv(m.lateDebitsRefused)}; ` +
      `terminate faults: armed ${armed?.['terminate-code'] ?? 0} code + ${armed?.['terminate-unknown'] ?? 0} unknown outcome, met ${m.terminateFaults}; ` +
      `arranged: held wins ${m.heldWins}, slow terminates ${m.slowTerminates}, slow bets ${m.slowBets}, dead compensations ${m.deadCompensations}`,
  );
  lines.push(`wallet faults met: ${kv(r.walletFaults)}`);
  if (r.scheduler) {
    lines.push(`armed faults: ${kv(r.scheduler.walletFaults)}`);
    const kills = Object.values(r.scheduler.kills).reduce((a, b) => a + b, 0);
    lines.push(`kills: ${kills} (${kv(r.scheduler.kills)}), restarts: ${kills + r.scheduler.redisRestarts}, redis restarts: ${r.scheduler.redisRestarts}, worker pauses past the lock: ${r.scheduler.pauses}`);
  }
  if (r.failovers !== undefined && r.failovers.length > 0) lines.push(`primary kills: ${r.failovers.length} (failovers ${r.failovers.join(', ')})`);
  lines.push(`records: ${rec.records.total} (${kv(rec.records.byState)}), compensations ${rec.records.compensations}, dead ${rec.records.dead.length}; settled in ${r.settledInMs} ms`);
  for (const d of rec.records.dead) lines.push(`  dead ${d.transactionId}: ${d.reason}`);

  const totals = rec.players.reduce(
    (t, p) => ({
      winsAccepted: t.winsAccepted + p.winsAccepted,
      winsCredited: t.winsCredited + p.winsCredited,
      refundsAccepted: t.refundsAccepted + p.refundsAccepted,
      refundsApplied: t.refundsApplied + p.refundsApplied,
      betsRefused: t.betsRefused + p.betsRefused,
      betsCompensated: t.betsCompensated + p.betsCompensated,
    }),
    { winsAccepted: 0, winsCredited: 0, refundsAccepted: 0, refundsApplied: 0, betsRefused: 0, betsCompensated: 0 },
  );
  lines.push(
    `wins accepted ${totals.winsAccepted} / credited ${totals.winsCredited}; refunds accepted ${totals.refundsAccepted} / applied ${totals.refundsApplied}; ` +
      `bets refused ${totals.betsRefused} / applied then compensated ${totals.betsCompensated}`,
  );

  if (r.perPlayer) {
    lines.push('per player: history implies | wallet holds | wins accepted/credited | bets refused/compensated');
    for (const p of rec.players) {
      const mark = p.ledger === p.implied ? ' ' : '!';
      lines.push(
        `${mark} ${p.playerId}: ${p.implied} | ${p.ledger ?? 'never seen'} ${p.currency} | ${p.winsAccepted}/${p.winsCredited} | ${p.betsRefused}/${p.betsCompensated}`,
      );
    }
  }

  if (rec.findings.length === 0) lines.push('differences: none');
  else {
    lines.push(`differences (${rec.findings.length}; '!' counts in the closing line):`);
    for (const f of rec.findings) lines.push(findingLine(f));
  }
  lines.push(closingLine(rec));
  return lines;
}
