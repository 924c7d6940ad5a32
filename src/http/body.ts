import express, { type NextFunction, type Request, type Response } from 'express';
import { parseJson } from '../lib/json';
import { BODY_LIMIT_BYTES } from './errors';

/**
 * The one body parser: the raw text (any content type, at most 16 KiB), then lossless JSON so ids
 * and amounts keep every digit. No body at all counts as `{}`.
 *
 * A plain identity-encoded body is read here directly (the engine's every request); anything
 * compressed goes through express.text, which inflates it and applies the same limit.
 */
const readEncoded = express.text({ type: () => true, limit: BODY_LIMIT_BYTES });

/** The error body-parser raises for an oversized body, so the error handler answers 413 alike. */
function tooLarge(): Error {
  return Object.assign(new Error('request entity too large'), { type: 'entity.too.large', status: 413, expose: true });
}

function toJson(req: Request, text: string): void {
  // parseJson throws JsonSyntaxError, which the error handler answers with 400.
  req.body = text.trim() !== '' ? parseJson(text) : {};
}

function readText(req: Request, _res: Response, next: NextFunction): void {
  const encoding = req.headers['content-encoding'];
  if (encoding !== undefined && encoding.toLowerCase() !== 'identity') {
    readEncoded(req, _res, (err?: unknown) => {
      if (err !== undefined) return next(err);
      try {
        toJson(req, typeof req.body === 'string' ? req.body : '');
      } catch (e) {
        return next(e);
      }
      next();
    });
    return;
  }
  const declared = Number(req.headers['content-length'] ?? 0);
  if (declared > BODY_LIMIT_BYTES) {
    // Drain what was sent so the connection stays usable for the answer.
    req.resume();
    return next(tooLarge());
  }
  const chunks: Buffer[] = [];
  let size = 0;
  let failed = false;
  req.on('data', (chunk: Buffer) => {
    if (failed) return;
    size += chunk.length;
    if (size > BODY_LIMIT_BYTES) {
      failed = true;
      next(tooLarge());
      return;
    }
    chunks.push(chunk);
  });
  req.on('end', () => {
    if (failed) return;
    try {
      toJson(req, chunks.length === 1 ? (chunks[0] as Buffer).toString('utf8') : Buffer.concat(chunks).toString('utf8'));
    } catch (e) {
      return next(e);
    }
    next();
  });
  req.on('error', (err) => {
    if (failed) return;
    failed = true;
    next(Object.assign(err, { type: 'request.aborted', status: 400 }));
  });
}

export const jsonBody = [readText];
