import { DelayedError, type Job } from 'bullmq';
import type { TerminateJobData } from '../src/duties/queues';
import { retryDelayMs, type DelayUnit } from '../src/duties/retry-policy';
import type { WalletBreaker } from '../src/duties/wallet-breaker';
import type { Logger } from '../src/observability/logger';
import type { Durability } from '../src/store/durability';
import { OTHER_SESSIONS_RECHECK_MS, walletSessionFields, type SessionStore } from '../src/store/sessions';
import { Code, retryClass } from '../src/wallet/codes';
import type { WalletClient } from '../src/wallet/protocol';
import { RetryLater } from './backoff';

export interface TerminateProcessorDeps {
  readonly sessions: SessionStore;
  readonly wallet: WalletClient;
  readonly breaker: Pick<WalletBreaker, 'gate' | 'refused'>;
  /** REDIS_MIN_REPLICAS: a terminate goes out only once a replica has its decision (contract 9). */
  readonly durability: Pick<Durability, 'confirmStore'>;
  /** The shard a token's keys are in. */
  readonly shardOfToken: (tokenRef: string) => number;
  readonly logger: Logger;
  readonly providerId: string;
  readonly unit: DelayUnit;
  /** How often a token that still has a live session or pending/dead work is looked at again. */
  readonly recheckMs: number;
  /** One send (a wallet call and its record) holds the lease this long. */
  readonly leaseMs: number;
  /** The sweeper looks for a job behind an ending token after this long without news. */
  readonly graceMs: number;
  /** A terminate that keeps failing is retried until this long after the decision (DEAD_CHECK_WINDOW_MS). */
  readonly windowMs: number;
  readonly retentionSeconds: number;
  readonly now: () => number;
}

/** The terminate's retries follow the spec's delays, growing to at most this (contract 5.6). */
export const TERMINATE_MAX_DELAY_MS = 60_000;

/**
 * Terminates a wallet token (contract 5.6): the wallet deactivates the token at terminate, so it is
 * sent only once every session on the token ended and no credit or rollback of the token is
 * pending or dead, and the decision is taken atomically with the token's claims. A terminate that
 * fails is retried until the window passes; then the token is listed for operators.
 */
export function createTerminateProcessor(deps: TerminateProcessorDeps) {
  const { sessions, wallet, breaker, durability, shardOfToken, logger, providerId, unit, recheckMs, leaseMs, graceMs, windowMs, retentionSeconds, now } = deps;

  /** Waits use up no BullMQ attempt: the wait may outlast any retry schedule. */
  async function later(job: Job<TerminateJobData>, token: string | undefined, delayMs: number, reason: string): Promise<never> {
    if (token === undefined) throw new RetryLater(delayMs, reason);
    await job.moveToDelayed(now() + delayMs, token);
    throw new DelayedError();
  }

  return async function processTerminate(job: Job<TerminateJobData>, token?: string): Promise<string> {
    const { tokenRef } = job.data;
    // A terminate is no trial of a half-open breaker: one token's terminate that keeps failing
    // (the soak's injected terminate faults) would reopen it for every retry and bet.
    const gate = await breaker.gate('terminate');
    if (gate.kind === 'wait') {
      breaker.refused('terminate');
      return later(job, token, gate.ms, 'wallet circuit breaker open');
    }
    const leaseUntil = now() + leaseMs;
    const taken = await sessions.takeTerminate(tokenRef, { now: now(), leaseUntil, checkAt: leaseUntil + graceMs, sessionsCheckAt: now() + OTHER_SESSIONS_RECHECK_MS });
    switch (taken.kind) {
      case 'terminated':
      case 'missing':
        return taken.kind;
      case 'wait':
        // Another session still plays: its end decides, or the sweeper once it expired. Work that
        // still holds the token is looked at again here.
        if (taken.for === 'sessions') return 'waiting-for-sessions';
        return later(job, token, recheckMs, 'work still holds the token');
      case 'busy':
        return later(job, token, Math.max(0, taken.leaseUntil - now()), 'another sender holds the lease');
      case 'send':
        break;
    }

    const log = logger.child({ token_ref: tokenRef, attempt: taken.attempt });
    const fields = await sessions.tokenFields(tokenRef);
    if (fields === undefined) return 'missing';
    // The wallet deactivates the token for good: the decision, read and written on this primary,
    // must be on a replica first (a failed primary back for a moment as a primary may know of no
    // work still holding the token). The lease taken here runs out; the next run sends.
    if (!(await durability.confirmStore(shardOfToken(tokenRef)))) {
      log.warn('terminate not sent: its decision is not on a replica');
      return later(job, token, leaseMs, 'the terminate decision is not on a replica');
    }
    const outcome = await wallet.call('terminate', walletSessionFields(fields, providerId));
    const finish = { now: now(), retentionSeconds, walletCode: outcome.kind === 'ok' ? Code.Success : outcome.kind === 'rejected' ? outcome.code : null };
    if (outcome.kind === 'ok') {
      await sessions.finishTerminate(tokenRef, { ...finish, outcome: 'terminated', balance: outcome.response.balance });
      log.info('token terminated at the wallet');
      return 'terminated';
    }
    if (outcome.kind === 'rejected' && retryClass(outcome.code) === 'none') {
      // E.g. the token was deactivated already: nothing a retry could change.
      await sessions.finishTerminate(tokenRef, { ...finish, outcome: 'terminated' });
      log.warn({ wallet_code: outcome.code }, 'terminate refused for good; token taken as terminated');
      return 'terminated';
    }
    const reason = outcome.kind === 'rejected' ? `code ${outcome.code}` : outcome.reason;
    if (now() - taken.from >= windowMs) {
      await sessions.finishTerminate(tokenRef, { ...finish, outcome: 'given_up' });
      log.error({ reason }, 'terminate given up after its window: an operator must act (a repeated end drives it again)');
      return 'given-up';
    }
    await sessions.finishTerminate(tokenRef, { ...finish, outcome: 'retry' });
    const delayMs = Math.min(TERMINATE_MAX_DELAY_MS, retryDelayMs(taken.attempt, unit));
    log.warn({ reason, delay_ms: delayMs }, 'terminate to be retried');
    return later(job, token, delayMs, `terminate: ${reason}`);
  };
}
