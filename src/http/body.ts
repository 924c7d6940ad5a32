import { isUtf8 } from 'node:buffer';
import type { IncomingMessage, ServerResponse } from 'node:http';
import express, { type Request, type Response } from 'express';
import type { ErrorCode } from '../lib/error-codes';
import { JsonSyntaxError, parseJson } from '../lib/json';

/** Body limit of every engine route (contract section 4). */
export const BODY_LIMIT_BYTES = 16 * 1024;
/** The whole body must have arrived this long after the headers (contract section 4), else 408. */
export const BODY_TIMEOUT_MS = 10_000;

/**
 * A body the gateway could not take, with a stable code (undici's pattern: own subclasses rather
 * than the shape of another library's errors). errors.ts answers it with the code's status.
 */
export abstract class BodyError extends Error {
  abstract readonly code: Extract<ErrorCode, 'VALIDATION_FAILED' | 'PAYLOAD_TOO_LARGE' | 'REQUEST_TIMEOUT'>;
}

export class BodyTooLargeError extends BodyError {
  override readonly name = 'BodyTooLargeError';
  readonly code = 'PAYLOAD_TOO_LARGE';
  constructor() {
    super(`the body is over ${BODY_LIMIT_BYTES} bytes`);
  }
}

export class BodyTimeoutError extends BodyError {
  override readonly name = 'BodyTimeoutError';
  readonly code = 'REQUEST_TIMEOUT';
  constructor(timeoutMs: number) {
    super(`the body had not fully arrived ${timeoutMs} ms after the headers`);
  }
}

/** Not JSON, not UTF-8, or cut off: the message completes "body …". */
export class BodyUnreadableError extends BodyError {
  override readonly name = 'BodyUnreadableError';
  readonly code = 'VALIDATION_FAILED';
}

/**
 * The one body reader of the engine API: the raw bytes (any content type, at most 16 KiB, within
 * the body deadline), strictly UTF-8 (two different byte strings never become one id), then
 * lossless JSON so ids and amounts keep every digit. No body at all counts as `{}`.
 *
 * A plain identity-encoded body is read here directly (the engine's every request); anything
 * compressed goes through express.raw, which inflates it and applies the same limit to the
 * inflated bytes. Rejects with a BodyError, or with body-parser's own error (a corrupt or unknown
 * encoding), which errors.ts maps as every Express error.
 */
const readEncoded = express.raw({ type: () => true, limit: BODY_LIMIT_BYTES });

function toJson(bytes: Buffer): unknown {
  if (!isUtf8(bytes)) throw new BodyUnreadableError('is not valid UTF-8');
  const text = bytes.toString('utf8');
  if (text.trim() === '') return {};
  try {
    return parseJson(text);
  } catch (err) {
    if (err instanceof JsonSyntaxError) throw new BodyUnreadableError('is not valid JSON');
    throw err;
  }
}

export function readJsonBody(req: IncomingMessage, res: ServerResponse, timeoutMs = BODY_TIMEOUT_MS): Promise<unknown> {
  return new Promise((resolve, reject) => {
    let settled = false;
    const finish = (err: unknown, bytes?: Buffer): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      if (err !== undefined) {
        reject(err);
        return;
      }
      try {
        resolve(toJson(bytes ?? Buffer.alloc(0)));
      } catch (e) {
        reject(e);
      }
    };
    const timer = setTimeout(() => {
      // The rest of the body will not be read: the connection cannot carry another request.
      res.setHeader('Connection', 'close');
      finish(new BodyTimeoutError(timeoutMs));
    }, timeoutMs);

    const encoding = req.headers['content-encoding'];
    if (encoding !== undefined && encoding.toLowerCase() !== 'identity') {
      const r = req as Request;
      readEncoded(r, res as Response, (err?: unknown) => finish(err, Buffer.isBuffer(r.body) ? r.body : undefined));
      return;
    }
    if (Number(req.headers['content-length'] ?? 0) > BODY_LIMIT_BYTES) {
      // Drain what was sent so the connection stays usable for the answer.
      req.resume();
      finish(new BodyTooLargeError());
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      if (settled) return;
      size += chunk.length;
      if (size > BODY_LIMIT_BYTES) finish(new BodyTooLargeError());
      else chunks.push(chunk);
    });
    req.on('end', () => finish(undefined, chunks.length === 1 ? chunks[0] : Buffer.concat(chunks)));
    req.on('error', () => finish(new BodyUnreadableError('was cut off')));
  });
}
