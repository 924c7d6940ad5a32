import { Router, type Request } from 'express';
import type { Engine } from '../engine';
import { jsonNumber } from '../lib/json';
import { launchErrorPage } from './launch-page';
import { requestIdOf } from './request-id';
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

/** GET /launch: the player's entry; the wallet token stays here and never reaches the game client. */
export function launchRouter(engine: Engine): Router {
  const r = Router();
  r.get('/launch', async (req, res) => {
    const mode = launchMode(req);
    const result = await engine.launch(req.query, { requestId: requestIdOf(res) });
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
  });
  return r;
}
