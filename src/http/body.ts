import type { IncomingMessage, ServerResponse } from 'node:http';
import express, { type Request, type Response } from 'express';
import { parseJson } from '../lib/json';
import { BODY_LIMIT_BYTES } from './errors';

/**
 * The one body reader of the engine API: the raw text (any content type, at most 16 KiB), then
 * lossless JSON so ids and amounts keep every digit. No body at all counts as `{}`.
 *
 * A plain identity-encoded body is read here directly (the engine's every request); anything
 * compressed goes through express.text, which inflates it and applies the same limit. Rejects with
 * the errors errors.ts maps: JsonSyntaxError, or body-parser's typed errors.
 */
const readEncoded = express.text({ type: () => true, limit: BODY_LIMIT_BYTES });

/** The error body-parser raises for an oversized body, so both paths are answered 413 alike. */
function tooLarge(): Error {
  return Object.assign(new Error('request entity too large'), { type: 'entity.too.large', status: 413, expose: true });
}

// parseJson throws JsonSyntaxError, which errors.ts answers with 400.
const toJson = (text: string): unknown => (text.trim() !== '' ? parseJson(text) : {});

export function readJsonBody(req: IncomingMessage, res: ServerResponse): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const encoding = req.headers['content-encoding'];
    if (encoding !== undefined && encoding.toLowerCase() !== 'identity') {
      const r = req as Request;
      readEncoded(r, res as Response, (err?: unknown) => {
        if (err !== undefined) return reject(err);
        try {
          resolve(toJson(typeof r.body === 'string' ? r.body : ''));
        } catch (e) {
          reject(e);
        }
      });
      return;
    }
    if (Number(req.headers['content-length'] ?? 0) > BODY_LIMIT_BYTES) {
      // Drain what was sent so the connection stays usable for the answer.
      req.resume();
      reject(tooLarge());
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    let failed = false;
    req.on('data', (chunk: Buffer) => {
      if (failed) return;
      size += chunk.length;
      if (size > BODY_LIMIT_BYTES) {
        failed = true;
        reject(tooLarge());
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => {
      if (failed) return;
      try {
        resolve(toJson(chunks.length === 1 ? (chunks[0] as Buffer).toString('utf8') : Buffer.concat(chunks).toString('utf8')));
      } catch (e) {
        reject(e);
      }
    });
    req.on('error', (err) => {
      if (failed) return;
      failed = true;
      reject(Object.assign(err, { type: 'request.aborted', status: 400 }));
    });
  });
}
