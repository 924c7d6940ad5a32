import { request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { connect } from 'node:net';

/**
 * Requests as a hostile client sends them: exact bytes (bad UTF-8, corrupt gzip) and exact paths
 * (malformed % escapes that fetch and supertest would refuse or re-encode).
 */
export interface RawAnswer {
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  readonly text: string;
}

export function rawRequest(base: string, method: string, path: string, headers: Record<string, string> = {}, body?: Buffer | string): Promise<RawAnswer> {
  const url = new URL(base);
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: url.hostname, port: url.port, method, path, headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

/**
 * Writes `head` (the request line and headers, CRLF-separated, without the blank line) and then
 * `body`, and keeps the socket open; resolves with everything the server sent once it closed
 * the connection.
 */
export function sendAndWaitForClose(base: string, head: string, body: string): Promise<string> {
  const url = new URL(base);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(url.port), url.hostname);
    let received = '';
    socket.on('data', (chunk: Buffer) => (received += chunk.toString('utf8')));
    socket.on('error', reject);
    socket.on('close', () => resolve(received));
    socket.on('connect', () => socket.write(`${head}\r\n\r\n${body}`));
  });
}
