import { errorFor } from '../duties/settlement';
import { emptyBody, fieldIssues } from './schemas';
import { walletSessionFields } from '../store/sessions';
import { NO_CONTEXT, errors, failed, type Answer, type EngineDeps, type RequestContext } from './types';

/** balance and end: calls about the session, no transaction record. */
export interface SessionCalls {
  balance(sessionId: string, body: unknown, context?: RequestContext): Promise<Answer>;
  end(sessionId: string, body: unknown, context?: RequestContext): Promise<Answer>;
}

export function createSessionCalls(deps: EngineDeps): SessionCalls {
  const { wallet, sessions, duties, config, logger } = deps;

  return {
    async balance(sessionId, body, context = NO_CONTEXT) {
      const parsed = emptyBody.safeParse(body);
      if (!parsed.success) return failed(errors.validation(fieldIssues(parsed.error)));
      const session = await sessions.get(sessionId);
      if (session === undefined) return failed(errors.sessionNotFound());
      // The wallet token is deactivated once terminate went out.
      if (session.state === 'ended') return failed(errors.sessionEnded());
      const outcome = await wallet.call('balance', walletSessionFields(session, config.PROVIDER_ID), context);
      if (outcome.kind !== 'ok') return failed(errorFor(outcome));
      await sessions.touch(sessionId, outcome.response.balance);
      return { state: 'succeeded', transactionId: null, balance: outcome.response.balance, currency: session.currency };
    },

    /**
     * Moves the session to `ending` (no new bets). With credits/rollbacks still pending, the
     * terminate is queued to run after them (202); with none, it is sent now. A terminate that
     * does not go through inline is queued too, so the token is always deactivated in the end.
     */
    async end(sessionId, body, context = NO_CONTEXT) {
      const parsed = emptyBody.safeParse(body);
      if (!parsed.success) return failed(errors.validation(fieldIssues(parsed.error)));
      const session = await sessions.get(sessionId);
      if (session === undefined) return failed(errors.sessionNotFound());
      const done = { state: 'succeeded', transactionId: null, balance: session.balance, currency: session.currency } as const;
      if (session.state === 'ended') return done;

      const before = await sessions.beginEnd(sessionId);
      if (before === undefined) return failed(errors.sessionNotFound());
      if (before === 'ended') return done;
      const queued = { ...done, state: 'pending' } as const;

      if ((await sessions.pendingCount(session)) > 0) {
        await duties.enqueueTerminate(sessionId);
        return queued;
      }
      const outcome = await wallet.call('terminate', walletSessionFields(session, config.PROVIDER_ID), context);
      if (outcome.kind === 'ok') {
        await sessions.markEnded(sessionId, outcome.response.balance);
        return { ...done, balance: outcome.response.balance };
      }
      logger.warn({ session_id: sessionId, wallet_code: outcome.kind === 'rejected' ? outcome.code : null }, 'inline terminate failed; queued');
      await duties.enqueueTerminate(sessionId);
      return queued;
    },
  };
}
