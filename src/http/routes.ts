import { Router, type Request, type Response } from 'express';
import type { Answer, Engine } from '../engine';
import { jsonNumber } from '../lib/json';
import { bearerAuth } from './auth';
import { jsonBody } from './body';
import { runWithRequestId } from './context';
import { notFound } from './errors';
import { launchErrorPage } from './launch-page';
import { requestIdOf } from './request-id';
import { sendAnswer, sendError, sendJson, viewBody, walletStatusBody } from './respond';

/** Express 5 passes a rejected promise to the error handler; the request id scopes the work's logs. */
function answering(run: (req: Request) => Promise<Answer>) {
  return async (req: Request, res: Response): Promise<void> => {
    sendAnswer(res, await runWithRequestId(requestIdOf(res), () => run(req)));
  };
}

const param = (req: Request, name: string): string => String(req.params[name]);

/** /engine/v1: the game-engine API of contract section 4. */
export function engineRouter(engine: Engine, apiKey: string): Router {
  const r = Router();
  r.use(bearerAuth(apiKey));
  r.use(jsonBody);
  r.post('/sessions/:sessionId/balance', answering((req) => engine.balance(param(req, 'sessionId'), req.body)));
  r.post('/sessions/:sessionId/bet', answering((req) => engine.bet(param(req, 'sessionId'), req.body)));
  r.post('/sessions/:sessionId/win', answering((req) => engine.win(param(req, 'sessionId'), req.body)));
  r.post('/sessions/:sessionId/refund', answering((req) => engine.refund(param(req, 'sessionId'), req.body)));
  r.post('/sessions/:sessionId/end', answering((req) => engine.end(param(req, 'sessionId'), req.body)));
  r.get('/transactions/:transactionId', async (req, res) => {
    const found = await runWithRequestId(requestIdOf(res), () => engine.getTransaction(param(req, 'transactionId')));
    if (found.kind === 'failed') sendError(res, found.error);
    else sendJson(res, 200, viewBody(found.view));
  });
  r.post('/transactions/:transactionId/verify', async (req, res) => {
    const result = await runWithRequestId(requestIdOf(res), () => engine.verify(param(req, 'transactionId'), req.body));
    if (result.kind === 'failed') sendError(res, result.error);
    else sendJson(res, 200, { ...viewBody(result.view), wallet: walletStatusBody(result.wallet) });
  });
  r.use((_req, res) => sendError(res, notFound()));
  return r;
}

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
    const result = await runWithRequestId(requestIdOf(res), () => engine.launch(req.query));
    res.setHeader('Cache-Control', 'no-store');
    if (result.kind === 'launched') {
      if (mode.json) {
        sendJson(res, 200, { session_id: result.sessionId, balance: jsonNumber(result.balance), currency: result.currency, game_url: result.gameUrl });
      } else {
        res.status(302).location(result.gameUrl).end();
      }
      return;
    }
    if (mode.htmlErrors) res.status(result.error.httpStatus).type('html').send(launchErrorPage(result.error, requestIdOf(res)));
    else sendError(res, result.error);
  });
  return r;
}
