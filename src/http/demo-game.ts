import { randomBytes, randomUUID } from 'node:crypto';
import express, { Router, type Request, type Response } from 'express';
import { z } from 'zod';
import type { Answer, Engine, EngineError } from '../engine';
import { fieldIssues } from '../engine/schemas';
import { errors } from '../engine/types';
import { codedError } from '../lib/error-codes';
import { jsonNumber } from '../lib/json';
import { fractionDigits, fromMinor, toMinor } from '../lib/money';
import type { Logger } from '../observability/logger';
import { Code } from '../wallet/codes';
import { demoGamePage } from './demo-game-page';
import { requestIdOf } from './request-id';
import { sendError, sendJson } from './respond';

/**
 * The demo game of `npm run dev` (DEMO_GAME=true): GAME_URL_TEMPLATE's default `/demo-game` page
 * and the few server-side routes it calls. Those routes play the game engine's part in-process
 * through the engine use cases, so the page never holds the engine key or the wallet token: it
 * knows only its session id.
 */
export const DEMO_GAME_PATH = '/demo-game';

/** Stakes the page offers; anything else is refused, so the page cannot be made to bet odd amounts. */
export const DEMO_STAKES = ['0.50', '1.00', '2.00', '5.00'] as const;
/** A spin wins twice its stake with this chance; otherwise a zero win closes the round. */
export const DEMO_WIN_CHANCE = 0.4;
/** "The wallet fails win credits": each win's credit is refused this often before the wallet takes it. */
export const DEMO_CREDIT_FAILURES = 3;
const SYMBOLS = ['7', 'BAR', 'A', 'K', 'Q', 'J'] as const;

/** The wallet a demo session plays at. */
export interface DemoWallet {
  readonly engine: Pick<Engine, 'bet' | 'win' | 'balance' | 'getTransaction'>;
  /**
   * Base URL of the wallet simulator (a dev wallet) whose /__sim/faults arms the credit failures.
   * Against a wallet without that API the switch answers 502 and nothing is bet.
   */
  readonly simulatorUrl: string;
}

export interface DemoGameDeps {
  /** The wallet a session was launched against (its id tells it); undefined: no such session. */
  readonly walletOf: (sessionId: string) => DemoWallet | undefined;
  /** Uniform in [0, 1); decides each spin. Default Math.random. */
  readonly random?: () => number;
  readonly logger: Logger;
}

const session = z.string({ error: 'required' }).min(1, 'must not be empty').max(64, 'must be at most 64 characters');
const spinBody = z.strictObject({
  session,
  stake: z.enum(DEMO_STAKES).default('1.00'),
  fail_credit: z.boolean({ error: 'must be a boolean' }).default(false),
});
const sessionBody = z.strictObject({ session });

/** Short unique ids within the contract's 36 characters. */
const newId = (prefix: string): string => `demo-${prefix}-${randomUUID()}`.slice(0, 36);

/** Amounts and balances go to the page as decimal text: it only shows them, and text keeps `1.50` as written. */
function step(answer: Answer, transactionId: string, amount: string): Record<string, unknown> {
  if (answer.state === 'failed') {
    return { transaction_id: transactionId, amount, state: 'failed', error: { code: answer.error.code, message: answer.error.message } };
  }
  return { transaction_id: transactionId, amount, state: answer.state, balance: answer.balance };
}

function reelsFor(win: boolean, random: () => number): string[] {
  const pick = (): string => SYMBOLS[Math.floor(random() * SYMBOLS.length)] as string;
  if (win) {
    const symbol = pick();
    return [symbol, symbol, symbol];
  }
  const reels = [pick(), pick(), pick()];
  // A loss never shows three alike.
  if (reels[0] === reels[1] && reels[1] === reels[2]) reels[2] = SYMBOLS[(SYMBOLS.indexOf(reels[2] as never) + 1) % SYMBOLS.length] as string;
  return reels;
}

const faultFailed = (message: string): EngineError => codedError('DEMO_FAULT_FAILED', { message });

export function demoGameRouter(deps: DemoGameDeps): Router {
  const random = deps.random ?? Math.random;
  const router = Router();
  const api = Router();
  api.use(express.json({ limit: '1kb', strict: true }));

  /** Arms the simulator: the next DEMO_CREDIT_FAILURES credits of this transaction fail with code 12 (retried by the spec). */
  async function failCredit(simulatorUrl: string, transactionId: string): Promise<EngineError | undefined> {
    const url = `${simulatorUrl}/__sim/faults`;
    try {
      const res = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ type: 'failNext', op: 'credit', code: Code.InternalServiceError, count: DEMO_CREDIT_FAILURES, transactionId }),
        signal: AbortSignal.timeout(2_000),
      });
      if (res.ok) return undefined;
      return faultFailed(`the wallet at ${simulatorUrl} has no simulator fault API (HTTP ${res.status})`);
    } catch (err) {
      return faultFailed(`the simulator fault API did not answer: ${(err as Error).message}`);
    }
  }

  api.post('/balance', async (req: Request, res: Response) => {
    const parsed = sessionBody.safeParse(req.body ?? {});
    if (!parsed.success) return sendError(res, errors.validation(fieldIssues(parsed.error)));
    const wallet = deps.walletOf(parsed.data.session);
    if (wallet === undefined) return sendError(res, errors.sessionNotFound());
    const answer = await wallet.engine.balance(parsed.data.session, {}, { requestId: requestIdOf(res) });
    if (answer.state === 'failed') return sendError(res, answer.error);
    sendJson(res, 200, { balance: answer.balance, currency: answer.currency });
  });

  /** One round as a game engine plays it: bet, then a win (2× stake) or a zero win, which closes the round. */
  api.post('/spin', async (req: Request, res: Response) => {
    const parsed = spinBody.safeParse(req.body ?? {});
    if (!parsed.success) return sendError(res, errors.validation(fieldIssues(parsed.error)));
    const { session: sessionId, stake, fail_credit: failCredits } = parsed.data;
    const wallet = deps.walletOf(sessionId);
    if (wallet === undefined) return sendError(res, errors.sessionNotFound());
    const won = random() < DEMO_WIN_CHANCE;
    const digits = fractionDigits(stake);
    const payout = won ? fromMinor(toMinor(stake, digits) * 2n, digits) : fromMinor(0n, digits);
    const roundId = newId('r');
    const betId = newId('b');
    const winId = newId('w');

    const context = { requestId: requestIdOf(res) };
    // Armed before the bet: a switch that cannot work must not leave a round open.
    const armError = failCredits && won ? await failCredit(wallet.simulatorUrl, winId) : undefined;
    if (armError) return sendError(res, armError);

    const bet = await wallet.engine.bet(sessionId, { round_id: roundId, transaction_id: betId, amount: jsonNumber(stake) }, context);
    if (bet.state === 'failed') return sendError(res, bet.error);
    const win = await wallet.engine.win(sessionId, { round_id: roundId, transaction_id: winId, bet_transaction_id: betId, amount: jsonNumber(payout) }, context);
    if (win.state === 'failed') deps.logger.warn({ round_id: roundId, transaction_id: winId, code: win.error.code }, 'demo win refused');
    const balance = win.state === 'failed' ? bet.balance : win.balance;
    sendJson(res, 200, {
      round_id: roundId,
      outcome: won ? 'win' : 'loss',
      reels: reelsFor(won, random),
      bet: step(bet, betId, stake),
      win: step(win, winId, payout),
      balance,
      currency: bet.currency,
    });
  });

  /** The gateway's record of one of this session's transactions; a pending win is polled here until it settles. */
  api.get('/transactions/:id', async (req: Request, res: Response) => {
    const parsed = sessionBody.safeParse({ session: req.query.session });
    if (!parsed.success) return sendError(res, errors.validation(fieldIssues(parsed.error)));
    const wallet = deps.walletOf(parsed.data.session);
    if (wallet === undefined) return sendError(res, errors.sessionNotFound());
    const found = await wallet.engine.getTransaction(String(req.params.id));
    // Another session's record is as unknown to this page as a missing one.
    if (found.kind === 'failed' || found.view.session_id !== parsed.data.session) {
      return sendError(res, found.kind === 'failed' ? found.error : errors.transactionNotFound());
    }
    const { transaction_id, kind, state, attempts, last_wallet_code, balance } = found.view;
    sendJson(res, 200, { transaction_id, kind, state, attempts, last_wallet_code, balance });
  });

  router.use(`${DEMO_GAME_PATH}/api`, api);
  router.get(DEMO_GAME_PATH, (_req: Request, res: Response) => {
    // A fresh nonce per page: the inline script and style run, nothing injected would.
    const nonce = randomBytes(16).toString('base64');
    res
      .status(200)
      .set('content-type', 'text/html; charset=utf-8')
      .set('cache-control', 'no-store')
      .set(
        'content-security-policy',
        `default-src 'none'; script-src 'nonce-${nonce}'; style-src 'nonce-${nonce}'; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'`,
      )
      .set('referrer-policy', 'no-referrer')
      .send(demoGamePage({ nonce, stakes: DEMO_STAKES, creditFailures: DEMO_CREDIT_FAILURES }));
  });
  return router;
}
