import type { Response } from 'express';
import type { Answer, EngineError, WalletStatusView } from '../engine';
import { jsonNumber, stringifyJson } from '../lib/json';
import type { TransactionView } from '../store/types';
import { requestIdOf } from './request-id';

/**
 * The engine answer shapes of contract section 4, written with lossless JSON (amounts, balances
 * and ids as raw JSON numbers). Every body carries request_id.
 */
export function sendJson(res: Response, status: number, body: Record<string, unknown>): void {
  // Written directly: res.send would look up the type, set the charset and check freshness per call.
  const text = stringifyJson({ ...body, request_id: requestIdOf(res) });
  res.statusCode = status;
  res.setHeader('Content-Type', 'application/json; charset=utf-8');
  res.setHeader('Content-Length', Buffer.byteLength(text));
  res.end(text);
}

export function errorBody(error: EngineError): Record<string, unknown> {
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
export function sendError(res: Response, error: EngineError): void {
  sendJson(res, error.httpStatus, errorBody(error));
}

export function sendAnswer(res: Response, answer: Answer): void {
  if (answer.state === 'failed') {
    sendError(res, answer.error);
    return;
  }
  sendJson(res, answer.state === 'succeeded' ? 200 : 202, {
    state: answer.state,
    transaction_id: answer.transactionId,
    balance: jsonNumber(answer.balance),
    currency: answer.currency,
  });
}

export function viewBody(view: TransactionView): Record<string, unknown> {
  return { ...view, amount: jsonNumber(view.amount), balance: view.balance === null ? null : jsonNumber(view.balance) };
}

export function walletStatusBody(said: WalletStatusView): Record<string, unknown> {
  return {
    outcome: said.outcome,
    wallet_code: said.walletCode,
    message: said.message,
    balance: said.balance === null ? null : jsonNumber(said.balance),
  };
}
