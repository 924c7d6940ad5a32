import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { NextFunction, Request, Response } from 'express';

/** A caller's id is kept when it is short and plain (it ends up in logs and headers). */
const SANE_ID = /^[A-Za-z0-9._:-]{1,128}$/;

export const REQUEST_ID_HEADER = 'X-Request-Id';

/** The caller's X-Request-Id when sane, else a fresh uuid; echoed at once. */
export function assignRequestId(req: IncomingMessage, res: ServerResponse): string {
  const given = req.headers['x-request-id'];
  const id = typeof given === 'string' && SANE_ID.test(given) ? given : randomUUID();
  res.setHeader(REQUEST_ID_HEADER, id);
  return id;
}

/** The same for Express routes, kept in res.locals. */
export function requestId(req: Request, res: Response, next: NextFunction): void {
  res.locals.requestId = assignRequestId(req, res);
  next();
}

export function requestIdOf(res: Response): string {
  return res.locals.requestId as string;
}
