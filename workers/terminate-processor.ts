import { DelayedError, type Job } from 'bullmq';
import type { TerminateJobData } from '../src/duties/queues';
import type { Logger } from '../src/observability/logger';
import { walletSessionFields, type SessionStore } from '../src/store/sessions';
import { retryClass } from '../src/wallet/codes';
import type { WalletClient } from '../src/wallet/protocol';
import { RetryLater } from './backoff';

export interface TerminateProcessorDeps {
  readonly sessions: SessionStore;
  readonly wallet: WalletClient;
  readonly logger: Logger;
  readonly providerId: string;
  /** How often an ending session's pending set is looked at again (fixed: not the spec's schedule). */
  readonly recheckMs: number;
  readonly now: () => number;
}

/**
 * Ends a session after its pending work (contract 5.6): the wallet deactivates the token at
 * terminate, so a credit or rollback still retrying must settle first.
 */
export function createTerminateProcessor(deps: TerminateProcessorDeps) {
  const { sessions, wallet, logger, providerId, recheckMs, now } = deps;

  return async function processTerminate(job: Job<TerminateJobData>, token?: string): Promise<string> {
    const { sessionId } = job.data;
    const session = await sessions.get(sessionId);
    if (session === undefined || session.state !== 'ending') return session?.state ?? 'missing';

    if ((await sessions.pendingCount(session)) > 0) {
      if (token === undefined) throw new RetryLater(recheckMs, 'pending work');
      // DelayedError does not use up an attempt: the wait may outlast a whole retry schedule.
      await job.moveToDelayed(now() + recheckMs, token);
      throw new DelayedError();
    }

    const outcome = await wallet.call('terminate', walletSessionFields(session, providerId));
    if (outcome.kind === 'ok') {
      await sessions.markEnded(sessionId, outcome.response.balance);
      logger.info({ sessionId }, 'session terminated at the wallet');
      return 'ended';
    }
    if (outcome.kind === 'rejected' && retryClass(outcome.code) === 'none') {
      // E.g. the token was already deactivated: nothing more a retry could change.
      await sessions.markEnded(sessionId);
      logger.warn({ sessionId, code: outcome.code }, 'terminate refused; session marked ended');
      return 'ended';
    }
    const reason = outcome.kind === 'rejected' ? `code ${outcome.code}` : outcome.reason;
    logger.warn({ sessionId, reason }, 'terminate to be retried');
    throw new RetryLater(recheckMs, `terminate: ${reason}`);
  };
}
