import type { NextFunction, Request, Response } from 'express';
import type { EngineError } from '../engine';
import { errors } from '../engine/types';
import { JsonSyntaxError } from '../lib/json';
import type { Logger } from '../observability/logger';
import { sendError } from './respond';

/** Body limit of every engine route (contract section 4). */
export const BODY_LIMIT_BYTES = 16 * 1024;

export const notFound = (): EngineError => ({ code: 'NOT_FOUND', walletCode: null, httpStatus: 404, message: 'no such route' });

const INTERNAL: EngineError = { code: 'INTERNAL_ERROR', walletCode: null, httpStatus: 500, message: 'internal error; the request may be repeated with the same body' };

/** Errors body-parser raises carry a `type`; everything else is the gateway's own fault. */
function fromThrown(err: unknown): EngineError | undefined {
  if (err instanceof JsonSyntaxError) return errors.validation([{ field: 'body', message: 'is not valid JSON' }]);
  const type = (err as { type?: unknown } | null)?.type;
  if (type === 'entity.too.large') {
    return { code: 'PAYLOAD_TOO_LARGE', walletCode: null, httpStatus: 413, message: `the body is over ${BODY_LIMIT_BYTES} bytes` };
  }
  if (typeof type === 'string' && (err as { status?: number }).status !== undefined && (err as { status: number }).status < 500) {
    return errors.validation([{ field: 'body', message: `could not be read (${type})` }]);
  }
  return undefined;
}

/**
 * The one mapping of a thrown error to an answer, for the engine API and every Express route:
 * a bad body is the caller's 4xx; anything else is a bug or broken infrastructure, logged, 500.
 */
export function thrownToError(err: unknown, logger: Logger, requestId: string, path: string): EngineError {
  const known = fromThrown(err);
  if (known !== undefined) return known;
  logger.error({ err, request_id: requestId, path }, 'request failed');
  return INTERNAL;
}

/** The Express error handler: thrown errors become the contract's error shape too. */
export function errorHandler(logger: Logger) {
  return (err: unknown, req: Request, res: Response, next: NextFunction): void => {
    if (res.headersSent) {
      next(err);
      return;
    }
    sendError(res, thrownToError(err, logger, res.locals.requestId as string, req.path));
  };
}
