import { Router, type Request, type Response } from 'express';
import { DEFAULT_WALLET_ID } from '../config/registry';
import type { Routing } from '../engine/routing';
import { jsonNumber } from '../lib/json';
import { launchErrorPage } from './launch-page';
import { requestIdOf } from './request-id';
import { noteWallet } from './request-log';
import { sendError, sendJson } from './respond';

/**
 * How the launch answers: `Accept: application/json` → JSON; otherwise a redirect, and an error
 * as an HTML page when the browser asked for HTML (JSON when it did not say).
 */
function launchMode(req: Request): { json: boolean; htmlErrors: boolean } {
  const accept = req.headers.accept ?? '';
  const preferred = accept === '' ? 'html' : req.accepts(['html', 'json']);
  return { json: preferred === 'json', htmlErrors: preferred === 'html' && /text\/html/i.test(accept) };
}

/**
 * GET /launch/{wallet_id} and GET /launch (wallet `default`): the player's entry; the wallet token
 * stays here and never reaches the game client.
 */
export function launchRouter(routing: Routing): Router {
  const r = Router();
  const launch = async (walletId: string, req: Request, res: Response): Promise<void> => {
    const mode = launchMode(req);
    const result = await routing.launch(walletId, req.query, { requestId: requestIdOf(res) });
    if (result.kind === 'launched' || result.error.code !== 'WALLET_NOT_FOUND') noteWallet(res, walletId);
    res.setHeader('Cache-Control', 'no-store');
    if (result.kind === 'launched') {
      if (mode.json) {
        sendJson(res, 200, { session_id: result.sessionId, balance: jsonNumber(result.balance), currency: result.currency, game_url: result.gameUrl });
      } else {
        res.status(302).location(result.gameUrl).end();
      }
      return;
    }
    if (result.retryAfterMs !== undefined) res.setHeader('Retry-After', String(Math.ceil(result.retryAfterMs / 1000)));
    if (mode.htmlErrors) res.status(result.error.httpStatus).type('html').send(launchErrorPage(result.error, requestIdOf(res)));
    else sendError(res, result.error);
  };
  r.get('/launch', (req, res) => launch(DEFAULT_WALLET_ID, req, res));
  r.get('/launch/:walletId', (req, res) => launch(req.params.walletId, req, res));
  return r;
}
