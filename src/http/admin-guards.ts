import type { NextFunction, Request, Response } from 'express';
import { codedError } from '../lib/error-codes';
import { sendError } from './respond';

/**
 * What keeps a browser that holds the operators' cached Basic credentials from being used by
 * another site (contract section 6): the admin pages cannot be framed (clickjacking), and a
 * change (any method but GET/HEAD/OPTIONS) from another origin is refused with 403.
 */
export function noFraming(_req: Request, res: Response, next: NextFunction): void {
  res.setHeader('X-Frame-Options', 'DENY');
  res.setHeader('Content-Security-Policy', "frame-ancestors 'none'");
  next();
}

const READ_ONLY_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);
/** `none`: typed into the address bar or a bookmark; `same-origin`: the admin page itself. */
const OWN_SITES = new Set(['same-origin', 'none']);

/**
 * Whether the browser says a change comes from another origin. `Sec-Fetch-Site` decides when a
 * browser sent it; else `Origin` (a browser sends it on every cross-origin POST) must name this
 * host. A request with neither (curl, scripts) is not a browser's cross-site request: allowed.
 */
export function isCrossOriginChange(req: Request): boolean {
  if (READ_ONLY_METHODS.has(req.method)) return false;
  const site = req.headers['sec-fetch-site'];
  if (typeof site === 'string') return !OWN_SITES.has(site.toLowerCase());
  const origin = req.headers.origin;
  if (origin === undefined) return false;
  try {
    const from = new URL(origin);
    return from.host !== new URL(`${from.protocol}//${req.headers.host ?? ''}`).host;
  } catch {
    // `null` (a sandboxed frame, a file) or garbage: not this origin.
    return true;
  }
}

export function sameOriginChanges(req: Request, res: Response, next: NextFunction): void {
  if (isCrossOriginChange(req)) {
    sendError(res, codedError('CROSS_ORIGIN_REFUSED'));
    return;
  }
  next();
}
