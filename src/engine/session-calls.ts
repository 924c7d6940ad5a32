import { errorFor } from '../duties/settlement';
import { emptyBody, fieldIssues } from './schemas';
import { OTHER_SESSIONS_RECHECK_MS, walletSessionFields } from '../store/sessions';
import { Code } from '../wallet/codes';
import { NO_CONTEXT, errors, failed, type Answer, type EngineDeps, type RequestContext } from './types';

/** balance and end: calls about the session, no transaction record. */
export interface SessionCalls {
  balance(sessionId: string, body: unknown, context?: RequestContext): Promise<Answer>;
  end(sessionId: string, body: unknown, context?: RequestContext): Promise<Answer>;
}

/** The inline terminate's send lease outlasts its wallet call by this much; the sweeper waits as long again. */
const TERMINATE_LEASE_MARGIN_MS = 5_000;

export function createSessionCalls(deps: EngineDeps): SessionCalls {
  const { wallet, sessions, transactions, duties, durability, config, clock, logger, breaker } = deps;

  return {
    async balance(sessionId, body, context = NO_CONTEXT) {
      const parsed = emptyBody.safeParse(body);
      if (!parsed.success) return failed(errors.validation(fieldIssues(parsed.error)));
      const session = await sessions.profile(sessionId);
      if (session === undefined) return failed(errors.sessionNotFound());
      // One round trip before the wallet call: the session still exists, is not ended, and its expiry is renewed.
      const state = await sessions.touch(session);
      if (state === undefined) return failed(errors.sessionNotFound());
      // The wallet token is deactivated once terminate went out.
      if (state === 'ended') return failed(errors.sessionEnded());
      if (!breaker.allowsCalls()) {
        breaker.refused('balance');
        return failed(errors.walletDown());
      }
      const outcome = await wallet.call('balance', walletSessionFields(session, config.PROVIDER_ID), context);
      if (outcome.kind !== 'ok') return failed(errorFor(outcome));
      return { state: 'succeeded', transactionId: null, balance: outcome.response.balance, currency: session.currency };
    },

    /**
     * Ends the gateway session (no more bets) and, if nothing else holds its wallet token, takes
     * the decision to terminate the token atomically with the token's claims (contract 5.6) and
     * sends the terminate now (200). Otherwise a terminate job drives it (202): it waits for the
     * token's other sessions and pending or dead work, and retries the terminate. A repeated `end`
     * makes sure such a job exists.
     */
    async end(sessionId, body, context = NO_CONTEXT) {
      const parsed = emptyBody.safeParse(body);
      if (!parsed.success) return failed(errors.validation(fieldIssues(parsed.error)));
      const session = await sessions.profile(sessionId);
      if (session === undefined) return failed(errors.sessionNotFound());
      const now = clock();
      const leaseUntil = now + config.WALLET_TIMEOUT_MS + TERMINATE_LEASE_MARGIN_MS;
      const ended = await sessions.end(session, {
        now,
        leaseUntil,
        checkAt: leaseUntil + TERMINATE_LEASE_MARGIN_MS,
        sessionsCheckAt: now + OTHER_SESSIONS_RECHECK_MS,
      });
      if (ended.kind === 'not_found') return failed(errors.sessionNotFound());
      // The ended session (and a terminate job behind a 202) must survive a failover (contract 9). A
      // repeated end may rest on another process's writes and write nothing itself: confirmRead.
      const answer = async (state: 'succeeded' | 'pending', balance: string): Promise<Answer> =>
        (await durability.confirmRead(transactions.shardOf(session))) ? { state, transactionId: null, balance, currency: session.currency } : failed(errors.notDurable());
      if (ended.kind === 'ended') return answer('succeeded', ended.balance);
      if (ended.kind === 'waiting') return answer('pending', ended.balance);
      if (ended.kind === 'pending') {
        await duties.enqueueTerminate(session.tokenRef);
        return answer('pending', ended.balance);
      }

      if (!breaker.allowsCalls()) {
        // The terminate waits for the wallet like any background call: give the lease back to its job.
        breaker.refused('terminate');
        await sessions.finishTerminate(session.tokenRef, { outcome: 'retry', now: clock(), retentionSeconds: config.RECORD_RETENTION_SECONDS, walletCode: null });
        await duties.enqueueTerminate(session.tokenRef);
        return answer('pending', ended.balance);
      }
      // The wallet deactivates the token for good: only once a replica has the decision (a failover
      // could otherwise bring back a token state that still counts on it). Else its job sends.
      if (!(await durability.confirmStore(transactions.shardOf(session)))) {
        await sessions.finishTerminate(session.tokenRef, { outcome: 'retry', now: clock(), retentionSeconds: config.RECORD_RETENTION_SECONDS, walletCode: null });
        await duties.enqueueTerminate(session.tokenRef);
        return failed(errors.notDurable());
      }
      const outcome = await wallet.call('terminate', walletSessionFields(session, config.PROVIDER_ID), context);
      if (outcome.kind === 'ok') {
        await sessions.finishTerminate(session.tokenRef, { outcome: 'terminated', now: clock(), retentionSeconds: config.RECORD_RETENTION_SECONDS, walletCode: Code.Success, balance: outcome.response.balance });
        return answer('succeeded', outcome.response.balance);
      }
      // The job reads the answer again (a final refusal, a retry, the window) and drives it from here.
      const walletCode = outcome.kind === 'rejected' ? outcome.code : null;
      logger.warn({ session_id: sessionId, wallet_code: walletCode }, 'inline terminate did not go through; queued');
      await sessions.finishTerminate(session.tokenRef, { outcome: 'retry', now: clock(), retentionSeconds: config.RECORD_RETENTION_SECONDS, walletCode });
      await duties.enqueueTerminate(session.tokenRef);
      return answer('pending', ended.balance);
    },
  };
}
