import express, { type NextFunction, type Request, type Response } from 'express';
import { parseJson } from '../lib/json';
import { BODY_LIMIT_BYTES } from './errors';

/**
 * The one body parser: the raw text (any content type, at most 16 KiB), then lossless JSON so ids
 * and amounts keep every digit. No body at all counts as `{}`.
 */
const readText = express.text({ type: () => true, limit: BODY_LIMIT_BYTES });

function toJson(req: Request, _res: Response, next: NextFunction): void {
  const text: unknown = req.body;
  // parseJson throws JsonSyntaxError, which the error handler answers with 400.
  req.body = typeof text === 'string' && text.trim() !== '' ? parseJson(text) : {};
  next();
}

export const jsonBody = [readText, toJson];
