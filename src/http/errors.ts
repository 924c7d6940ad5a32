import type { NextFunction, Request, Response } from 'express';
import type { EngineError } from '../engine';
import { errors } from '../engine/types';
import { codedError } from '../lib/error-codes';
import type { Logger } from '../observability/logger';
import { BodyError } from './body';
import { sendError } from './respond';

export const notFound = (): EngineError => codedError('NOT_FOUND');

/**
 * Errors of the HTTP libraries underneath (body-parser, raw-body, zlib through body-parser,
 * Express's router) that are the caller's fault carry a 4xx `status` (or `statusCode`): the
 * http-errors convention Express's own final handler reads. Anything else is not the caller's.
 */
function clientStatusOf(err: unknown): number | undefined {
  if (typeof err !== 'object' || err === null) return undefined;
  const { status, statusCode } = err as { status?: unknown; statusCode?: unknown };
  const value = typeof status === 'number' ? status : statusCode;
  return typeof value === 'number' && value >= 400 && value < 500 ? value : undefined;
}

/** The caller's fault, or undefined: then it is the gateway's own (a bug or broken infrastructure). */
function fromThrown(err: unknown): EngineError | undefined {
  if (err instanceof BodyError) {
    return err.code === 'VALIDATION_FAILED' ? errors.validation([{ field: 'body', message: err.message }]) : codedError(err.code, { message: err.message });
  }
  // Express decodes route parameters with decodeURIComponent; a malformed % escape throws here.
  if (err instanceof URIError) return errors.validation([{ field: 'path', message: 'is not valid URL encoding' }]);
  const status = clientStatusOf(err);
  if (status === 413) return codedError('PAYLOAD_TOO_LARGE');
  if (status === 404) return notFound();
  // Otherwise a body these libraries could not take: a corrupt or unknown Content-Encoding, an
  // aborted upload, bad JSON or charset to body-parser. Their text is not echoed (it may quote the body).
  if (status !== undefined) return errors.validation([{ field: 'body', message: 'could not be read' }]);
  return undefined;
}

/**
 * The one mapping of a thrown error to an answer, for the engine API and every Express route:
 * a bad request is the caller's 4xx; anything else is a bug or broken infrastructure, logged, 500.
 */
export function thrownToError(err: unknown, logger: Logger, requestId: string, path: string): EngineError {
  const known = fromThrown(err);
  if (known !== undefined) return known;
  logger.error({ err, request_id: requestId, path }, 'request failed');
  return codedError('INTERNAL_ERROR');
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
