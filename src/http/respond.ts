import type { ServerResponse } from 'node:http';
import type { Response } from 'express';
import type { Answer, EngineError, LookupResult, VerifyResult, WalletStatusView } from '../engine';
import { jsonNumber, stringifyJson } from '../lib/json';
import type { TransactionView } from '../store/types';
import { requestIdOf } from './request-id';

/**
 * The engine answer shapes of contract section 4, written with lossless JSON (amounts, balances
 * and ids as raw JSON numbers). Every body carries request_id.
 */
export interface Reply {
  readonly status: number;
  readonly body: Record<string, unknown>;
}

/** On a bare node response: the engine API writes here directly, Express routes through sendJson. */
export function writeJson(res: ServerResponse, status: number, body: Record<string, unknown>, requestId: string): void {
  // Written directly: res.send would look up the type, set the charset and check freshness per call.
  // Not `{ ...body, request_id }`: node 20's V8 adds a key after a spread through a runtime call.
  const text = stringifyJson(Object.assign({}, body, { request_id: requestId }));
  res.statusCode = status;
  res.setHeader('Content-Type', 'application/json; charset=utf-8');
  res.setHeader('Content-Length', Buffer.byteLength(text));
  res.end(text);
}

export function sendJson(res: Response, status: number, body: Record<string, unknown>): void {
  writeJson(res, status, body, requestIdOf(res));
}

function errorBody(error: EngineError): Record<string, unknown> {
  return {
    state: 'failed',
    error: {
      code: error.code,
      wallet_code: error.walletCode,
      message: error.message,
      ...(error.fields === undefined ? {} : { fields: error.fields }),
    },
  };
}

/** The one place an EngineError becomes an HTTP answer. */
export const errorReply = (error: EngineError): Reply => ({ status: error.httpStatus, body: errorBody(error) });

export function sendError(res: Response, error: EngineError): void {
  const { status, body } = errorReply(error);
  sendJson(res, status, body);
}

export function answerReply(answer: Answer): Reply {
  if (answer.state === 'failed') return errorReply(answer.error);
  return {
    status: answer.state === 'succeeded' ? 200 : 202,
    body: { state: answer.state, transaction_id: answer.transactionId, balance: jsonNumber(answer.balance), currency: answer.currency },
  };
}

export const lookupReply = (found: LookupResult): Reply => (found.kind === 'failed' ? errorReply(found.error) : { status: 200, body: viewBody(found.view) });

export const verifyReply = (result: VerifyResult): Reply =>
  result.kind === 'failed' ? errorReply(result.error) : { status: 200, body: { ...viewBody(result.view), wallet: walletStatusBody(result.wallet) } };

export function viewBody(view: TransactionView): Record<string, unknown> {
  return { ...view, amount: jsonNumber(view.amount), balance: view.balance === null ? null : jsonNumber(view.balance) };
}

function walletStatusBody(said: WalletStatusView): Record<string, unknown> {
  return {
    outcome: said.outcome,
    wallet_code: said.walletCode,
    message: said.message,
    balance: said.balance === null ? null : jsonNumber(said.balance),
  };
}
