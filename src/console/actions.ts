import { replaceFailedRollback } from '../duties/compensation';
import { ensureRetryJob, ensureTerminateJob, type Queues } from '../duties/queues';
import { operatorTarget, redrive, type RedriveResult } from '../duties/redrive';
import { deadCheckUpdate, statusFieldsOf } from '../duties/status-check';
import { codedError } from '../lib/error-codes';
import type { AuditEntry, AuditTrail } from '../store/audit';
import type { SessionStore } from '../store/sessions';
import type { TransactionStore } from '../store/transactions';
import type { Resolution, TransactionRecord, TransactionState } from '../store/types';
import { Code } from '../wallet/codes';
import type { WalletClient, WalletOutcome } from '../wallet/protocol';

/**
 * The operators' actions on a transaction: redrive, re-check now (wallet `status`) and a manual
 * resolution of a dead record. Each takes a note and is written to the audit trail (who, when,
 * what, the state before and after). Money moves only through wallet calls: a resolution records
 * what the operator found at the wallet and never calls it.
 */
export interface ActionDeps {
  readonly store: TransactionStore;
  readonly sessions: SessionStore;
  readonly queues: Queues;
  readonly audit: AuditTrail;
  readonly wallet: WalletClient;
  readonly providerId: string;
  /** A compensation the console starts is its job's until then; the sweeper takes it over after. */
  readonly compensationLeaseMs: number;
  readonly now: () => number;
}

/** Who acts and why. */
export interface Actor {
  readonly user: string;
  readonly note: string;
  readonly requestId: string;
}

export type ActionName = 'redrive' | 'recheck' | 'resolve-applied' | 'resolve-not-applied' | 'resolve-bet-not-applied';

export type ActionResult =
  | {
      readonly kind: 'done';
      readonly action: ActionName;
      /** The record moved (or asked about): a dead debit's compensation for a debit. */
      readonly targetId: string;
      readonly stateBefore: TransactionState;
      readonly stateAfter: TransactionState;
      /** recheck: what the wallet said. */
      readonly wallet?: WalletStatusAnswer;
      /** The token's terminate was driven again after the record let it go. */
      readonly terminateReleased: boolean;
      /** A rollback resolved not applied: its debit's next compensation, started at once. */
      readonly compensationId?: string;
    }
  /** `bet_not_applied` said of something that is not a debit's rollback. */
  | { readonly kind: 'not_a_bet'; readonly targetId: string }
  | { readonly kind: 'not_found' }
  | { readonly kind: 'not_dead'; readonly targetId: string; readonly state: TransactionState | undefined };

export interface WalletStatusAnswer {
  readonly outcome: 'ok' | 'rejected' | 'unknown' | 'not_asked';
  readonly walletCode: number | null;
  readonly message: string;
}

const RESOLUTION_ACTION: Record<Resolution, ActionName> = { applied: 'resolve-applied', not_applied: 'resolve-not-applied', bet_not_applied: 'resolve-bet-not-applied' };

/** What a resolution makes of the record, and of the debit a rollback stands for. */
const RESOLVED: Record<Resolution, { readonly state: TransactionState; readonly debitState: TransactionState; readonly note: string }> = {
  applied: { state: 'succeeded', debitState: 'compensated', note: 'operator: applied at the wallet' },
  // Only this rollback did not happen: the debit may still be at the wallet, so it is compensated anew.
  not_applied: { state: 'failed', debitState: 'compensating', note: 'operator: not applied at the wallet' },
  bet_not_applied: { state: 'failed', debitState: 'failed', note: 'operator: the bet was never applied at the wallet; nothing to roll back' },
};

/**
 * An engine refund standing in for its bet's compensation was acknowledged: "the bet was never
 * applied" leaves it nothing to reverse, so it ends succeeded, saying so, never failed (contract 5.3).
 */
const BET_NOT_APPLIED_REFUND = { state: 'succeeded', debitState: 'failed', note: 'operator: the bet was never applied at the wallet; nothing reversed' } as const;

function resolvedOf(resolution: Resolution, target: TransactionRecord): (typeof RESOLVED)[Resolution] {
  return resolution === 'bet_not_applied' && target.kind === 'rollback' && !target.isCompensation ? BET_NOT_APPLIED_REFUND : RESOLVED[resolution];
}

function entry(actor: Actor, action: ActionName, transactionId: string, targetId: string, before: string, after: string, result: string): AuditEntry {
  return { user: actor.user, action, transactionId, targetId, stateBefore: before, stateAfter: after, result, note: actor.note, requestId: actor.requestId };
}

/**
 * Dead work holds its token's terminate; once it let go, a terminate job must drive the token if
 * its end was asked (the job that waited on the work may have been given up or removed).
 */
async function releaseTerminate(deps: ActionDeps, record: TransactionRecord): Promise<boolean> {
  if (!(await deps.sessions.isEnding(record.tokenRef))) return false;
  await ensureTerminateJob(deps.queues, record.tokenRef);
  return true;
}

/** A redrive with its audit entry: the console's form and the admin API's redrives alike. */
export async function auditedRedrive(deps: ActionDeps, transactionId: string, actor: Actor): Promise<RedriveResult> {
  const result = await redrive({ store: deps.store, queues: deps.queues }, transactionId);
  if (result.kind === 'not_found') await deps.audit.appendUnknown(entry(actor, 'redrive', transactionId, '', '', '', 'not_found'));
  else if (result.kind === 'not_dead') await deps.audit.append(entry(actor, 'redrive', transactionId, result.transactionId, result.state, result.state, 'not_dead'));
  else await deps.audit.append(entry(actor, 'redrive', transactionId, result.transactionId, 'dead', 'pending', 'redriven'));
  return result;
}

export async function redriveAction(deps: ActionDeps, transactionId: string, actor: Actor): Promise<ActionResult> {
  const result = await auditedRedrive(deps, transactionId, actor);
  if (result.kind === 'not_found') return result;
  if (result.kind === 'not_dead') return { kind: 'not_dead', targetId: result.transactionId, state: result.state };
  return { kind: 'done', action: 'redrive', targetId: result.transactionId, stateBefore: 'dead', stateAfter: 'pending', terminateReleased: false };
}

function answerOf(status: WalletOutcome | undefined): WalletStatusAnswer {
  if (status === undefined) return { outcome: 'not_asked', walletCode: null, message: 'nothing to ask with: the record has no wallet request and its session expired' };
  switch (status.kind) {
    case 'ok':
      return { outcome: 'ok', walletCode: status.response.code, message: status.response.message };
    case 'rejected':
      return { outcome: 'rejected', walletCode: status.code, message: status.message };
    case 'unknown':
      return { outcome: 'unknown', walletCode: null, message: `no clear answer (${status.reason})` };
  }
}

/**
 * Asks the wallet `status` for the record now. A dead credit or rollback the wallet holds is
 * settled `succeeded` as the dead-check would (and releases what it held); any other record is
 * only asked about.
 */
export async function recheckAction(deps: ActionDeps, transactionId: string, actor: Actor): Promise<ActionResult> {
  const target = await operatorTarget(deps.store, transactionId);
  if (target === undefined) {
    await deps.audit.appendUnknown(entry(actor, 'recheck', transactionId, '', '', '', 'not_found'));
    return { kind: 'not_found' };
  }
  const fields = await statusFieldsOf(target, deps.sessions, deps.providerId);
  const status = fields === undefined ? undefined : await deps.wallet.call('status', fields, { requestId: actor.requestId });
  const update = status !== undefined && target.state === 'dead' && target.kind !== 'debit' ? deadCheckUpdate(target, status) : undefined;
  const settled = update !== undefined && (await deps.store.settle(target, { ...update, note: 'applied at the wallet (an operator re-check)' }));
  const after = settled ? 'succeeded' : ((await deps.store.get(target.transactionId))?.state ?? target.state);
  const wallet = answerOf(status);
  const said = wallet.walletCode === null ? wallet.outcome : `${wallet.outcome} ${wallet.walletCode}`;
  await deps.audit.append(entry(actor, 'recheck', transactionId, target.transactionId, target.state, after, `status: ${said}`));
  const terminateReleased = settled ? await releaseTerminate(deps, target) : false;
  return { kind: 'done', action: 'recheck', targetId: target.transactionId, stateBefore: target.state, stateAfter: after, wallet, terminateReleased };
}

/**
 * An operator's resolution of a dead record after checking the wallet (Resolution says what each
 * means). One store step that moves only a record still `dead`: it cannot run twice nor race a
 * redrive. A rollback resolved not applied re-opens its debit, whose next compensation starts here
 * (the sweeper starts it should this process stop first).
 */
export async function resolveAction(deps: ActionDeps, transactionId: string, resolution: Resolution, actor: Actor): Promise<ActionResult> {
  const action = RESOLUTION_ACTION[resolution];
  const target = await operatorTarget(deps.store, transactionId);
  if (target === undefined) {
    await deps.audit.appendUnknown(entry(actor, action, transactionId, '', '', '', 'not_found'));
    return { kind: 'not_found' };
  }
  const standsForDebit = target.kind === 'rollback' && target.referenceTransactionId !== null;
  if (resolution === 'bet_not_applied' && !standsForDebit) return { kind: 'not_a_bet', targetId: target.transactionId };
  const resolved = resolvedOf(resolution, target);
  const result = await deps.store.resolve(target, {
    resolution,
    update:
      resolved.state === 'succeeded'
        ? { state: 'succeeded', lastWalletCode: Code.Success, error: null, note: resolved.note }
        : { state: 'failed', error: codedError('WALLET_REJECTED', { message: `resolved by an operator: ${resolved.note}` }), note: resolved.note },
    ...(standsForDebit ? { debitState: resolved.debitState } : {}),
    audit: entry(actor, action, transactionId, target.transactionId, 'dead', resolved.state, 'resolved'),
  });
  if (result.kind === 'not_dead') {
    await deps.audit.append(entry(actor, action, transactionId, target.transactionId, result.state ?? '', result.state ?? '', 'not_dead'));
    return { kind: 'not_dead', targetId: target.transactionId, state: result.state };
  }
  const compensationId =
    resolution === 'not_applied' && standsForDebit
      ? await replaceFailedRollback({ store: deps.store, enqueue: (ref) => ensureRetryJob(deps.queues, ref, 0), now: deps.now, leaseMs: deps.compensationLeaseMs }, target)
      : undefined;
  const terminateReleased = await releaseTerminate(deps, target);
  return { kind: 'done', action, targetId: target.transactionId, stateBefore: 'dead', stateAfter: resolved.state, terminateReleased, ...(compensationId === undefined ? {} : { compensationId }) };
}
