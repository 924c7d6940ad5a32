import { DEFAULT_WALLET_ID, REGISTRY_ID, type EngineEntry } from '../config/registry';
import { codedError } from '../lib/error-codes';
import { walletOfSessionId } from '../registry/wallet-layout';
import type { Engine } from './index';
import { emptyBody, fieldIssues } from './schemas';
import { NO_CONTEXT, errors, type LaunchResult, type LookupResult, type RequestContext, type VerifyResult } from './types';

/**
 * Which wallet's use cases a request reaches (contract 11). Each wallet has an Engine of its own
 * (its client, breaker, stores and queues); a launch names its wallet, a session id tells its wallet,
 * and a game engine acts only on the wallets the registry gives it: a session or transaction of
 * another wallet is answered exactly as an unknown id is.
 */
export interface Routing {
  /** A launch against `walletId` (`default` for `GET /launch`); an unknown id is `404 WALLET_NOT_FOUND`, no wallet call. */
  launch(walletId: string, query: unknown, context?: RequestContext): Promise<LaunchResult>;
  /** The calls one game engine may make. */
  scopeOf(engine: EngineEntry): ScopedEngine;
}

export type SessionAction = 'bet' | 'win' | 'refund' | 'balance' | 'end';

/** A game engine's view: its sessions, and its transactions (`wallet`: the `?wallet=` of a lookup or verify). */
export type ScopedEngine = Pick<Engine, SessionAction> & {
  getTransaction(transactionId: string, wallet?: string): Promise<LookupResult>;
  verify(transactionId: string, body: unknown, context?: RequestContext, wallet?: string): Promise<VerifyResult>;
};

const walletNotFound = () => codedError('WALLET_NOT_FOUND');

function ambiguous(walletIds: readonly string[]) {
  return codedError('AMBIGUOUS_TRANSACTION', { message: `this transaction_id is held in wallets ${walletIds.join(', ')}; repeat with ?wallet=<id>` });
}

export function createRouting(engines: ReadonlyMap<string, Engine>): Routing {
  return {
    async launch(walletId, query, context = NO_CONTEXT) {
      const engine = REGISTRY_ID.test(walletId) ? engines.get(walletId) : undefined;
      return engine === undefined ? { kind: 'failed', error: walletNotFound() } : engine.launch(query, context);
    },

    scopeOf(entry) {
      const own = entry.wallets.filter((id) => engines.has(id));
      const home = engines.get(own.includes(DEFAULT_WALLET_ID) ? DEFAULT_WALLET_ID : own[0]!)!;
      // A session of another wallet goes to one of the engine's own, where its id names nothing.
      const engineOfSession = (sessionId: string): Engine => {
        const walletId = walletOfSessionId(sessionId);
        return walletId !== undefined && own.includes(walletId) ? engines.get(walletId)! : home;
      };
      /** The engine's wallets a lookup searches: the one named, or all of them. */
      const searched = (wallet: string | undefined): readonly string[] | 'none' => {
        if (wallet === undefined) return own;
        return own.includes(wallet) ? [wallet] : 'none';
      };
      async function find(transactionId: string, wallet: string | undefined): Promise<{ walletId: string; result: LookupResult } | LookupResult> {
        const ids = searched(wallet);
        if (ids === 'none') {
          // Validated as any lookup is, then unknown: another engine's wallet is not told apart from none.
          const result = await home.getTransaction(transactionId);
          return result.kind === 'failed' ? result : { kind: 'failed', error: errors.transactionNotFound() };
        }
        const results = await Promise.all(ids.map(async (walletId) => ({ walletId, result: await engines.get(walletId)!.getTransaction(transactionId) })));
        const found = results.filter((r) => r.result.kind === 'found');
        if (found.length > 1) return { kind: 'failed', error: ambiguous(found.map((r) => r.walletId)) };
        return found[0] ?? results[0]!.result;
      }
      return {
        bet: (id, body, context) => engineOfSession(id).bet(id, body, context),
        win: (id, body, context) => engineOfSession(id).win(id, body, context),
        refund: (id, body, context) => engineOfSession(id).refund(id, body, context),
        balance: (id, body, context) => engineOfSession(id).balance(id, body, context),
        end: (id, body, context) => engineOfSession(id).end(id, body, context),
        async getTransaction(transactionId, wallet) {
          const found = await find(transactionId, wallet);
          return 'walletId' in found ? found.result : found;
        },
        async verify(transactionId, body, context, wallet) {
          const parsed = emptyBody.safeParse(body);
          if (!parsed.success) return { kind: 'failed', error: errors.validation(fieldIssues(parsed.error)) };
          if (wallet === undefined && own.length === 1) return engines.get(own[0]!)!.verify(transactionId, body, context);
          const found = await find(transactionId, wallet);
          if (!('walletId' in found)) return found.kind === 'failed' ? found : { kind: 'failed', error: errors.transactionNotFound() };
          return engines.get(found.walletId)!.verify(transactionId, body, context);
        },
      };
    },
  };
}
