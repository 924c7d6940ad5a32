import { codedError } from '../lib/error-codes';
import { errorFor } from '../duties/settlement';
import { fieldIssues, launchQuery } from './schemas';
import { NO_CONTEXT, errors, type EngineDeps, type LaunchResult, type RequestContext } from './types';

/**
 * A player's launch: authenticate the launch token with the wallet, then open a gateway session
 * whose id (not the token) goes to the game client. A relaunch with the same token opens a new
 * session; the earlier one and its background work are left alone. A token is launched at most
 * TOKEN_LAUNCHES_PER_MINUTE times a minute and holds at most TOKEN_SESSION_CAP sessions: a replayed
 * launch URL cannot grow what the token's steps walk.
 */
export type Launch = (query: unknown, context?: RequestContext) => Promise<LaunchResult>;

const LAUNCH_WINDOW_MS = 60_000;

export function fillGameUrl(template: string, sessionId: string, gameId: string): string {
  return template.replaceAll('{session_id}', encodeURIComponent(sessionId)).replaceAll('{game_id}', encodeURIComponent(gameId));
}

export function createLaunch(deps: EngineDeps): Launch {
  const { wallet, sessions, config, clock, breaker } = deps;
  return async (query, context = NO_CONTEXT) => {
    const parsed = launchQuery.safeParse(query);
    if (!parsed.success) return { kind: 'failed', error: errors.validation(fieldIssues(parsed.error)) };
    const q = parsed.data;
    const allowance = await sessions.takeLaunch({ token: q.token, playerId: q.player_id, siteId: q.site_id }, { limit: config.TOKEN_LAUNCHES_PER_MINUTE, windowMs: LAUNCH_WINDOW_MS });
    if (!allowance.allowed) {
      return { kind: 'failed', error: errors.tooManyLaunches(`more than ${config.TOKEN_LAUNCHES_PER_MINUTE} launches with this token in a minute; try again later`), retryAfterMs: allowance.retryAfterMs };
    }
    if (!breaker.allowsCalls()) {
      breaker.refused('authenticate');
      return { kind: 'failed', error: errors.walletDown() };
    }
    const outcome = await wallet.call('authenticate', {
      token: q.token,
      player_id: q.player_id,
      site_id: q.site_id,
      provider_id: config.PROVIDER_ID,
      game_id: q.game_id,
      currency: q.currency,
    }, context);
    if (outcome.kind !== 'ok') return { kind: 'failed', error: errorFor(outcome) };
    const balance = outcome.response.balance;
    const created = await sessions.create(
      { token: q.token, playerId: q.player_id, siteId: q.site_id, currency: q.currency, gameId: q.game_id, balance },
      clock(),
      config.TOKEN_SESSION_CAP,
    );
    // The token's terminate was decided already: a session on it could not play (contract 5.6).
    if (created.kind === 'token_ended') return { kind: 'failed', error: errors.sessionEnded() };
    // The wallet is being removed from the registry (contract 11): as if it were gone already.
    if (created.kind === 'retired') return { kind: 'failed', error: codedError('WALLET_NOT_FOUND') };
    if (created.kind === 'full') {
      return { kind: 'failed', error: errors.tooManyLaunches(`this token holds ${config.TOKEN_SESSION_CAP} sessions; end one (or let one expire) first`) };
    }
    const { session } = created;
    return {
      kind: 'launched',
      sessionId: session.sessionId,
      balance,
      currency: q.currency,
      gameUrl: fillGameUrl(config.GAME_URL_TEMPLATE, session.sessionId, q.game_id),
    };
  };
}
