import { createHash, timingSafeEqual } from 'node:crypto';
import type { NextFunction, Request, Response } from 'express';
import { sendError } from './respond';

const digest = (text: string): Buffer => createHash('sha256').update(text, 'utf8').digest();

/**
 * `Authorization: Bearer <ENGINE_API_KEY>`. Both sides are hashed first so the comparison takes the
 * same time whatever the length or content of the guess.
 */
export function bearerAuth(apiKey: string) {
  const expected = digest(apiKey);
  return (req: Request, res: Response, next: NextFunction): void => {
    const header = req.headers.authorization;
    const match = typeof header === 'string' ? /^Bearer +(\S+) *$/i.exec(header) : null;
    if (match?.[1] !== undefined && timingSafeEqual(digest(match[1]), expected)) {
      next();
      return;
    }
    res.setHeader('WWW-Authenticate', 'Bearer');
    sendError(res, { code: 'UNAUTHORIZED', walletCode: null, httpStatus: 401, message: 'missing or wrong Bearer key' });
  };
}
