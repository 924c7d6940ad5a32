import { connect as h2connect, constants, type ClientHttp2Session, type ClientHttp2Stream, type OutgoingHttpHeaders } from 'node:http2';
import { isIP } from 'node:net';
import { connect as tlsConnect, type TLSSocket } from 'node:tls';

/**
 * Wallet calls over HTTP/2 on node:http2 itself: one multiplexed session at a time, a new one when
 * it ends (GOAWAY, a reset, the wallet closing an idle session). undici's HTTP/2 client cost the
 * caller about twice the CPU per call of its HTTP/1.1 over TLS, and of node:http2 alone
 * (bench/wallet-hop-cost.ts), which cancelled what HTTP/2 saves at the wallet.
 *
 * Each session's TLS connection offers h2 and http/1.1 in ALPN; a wallet that picks http/1.1 is
 * remembered as such and the caller sends through its HTTP/1.1 pool from then on.
 */

/** What one call hears back; the wallet client's Exchange implements it. */
export interface H2Handler {
  /** Before anything is sent; `abort` stops the stream (a settled handler aborts at once: nothing is sent). */
  onConnect(abort: (err?: Error) => void): void;
  onHeaders(statusCode: number): boolean;
  onData(chunk: Buffer): boolean;
  onComplete(): void;
  onError(err: Error): void;
}

export type Negotiated = 'h2' | 'http/1.1';

export interface H2TransportOptions {
  readonly origin: URL;
  readonly rejectUnauthorized: boolean;
  /** A connection not ready within this is dropped (the calls on it have their own deadline). */
  readonly connectTimeoutMs: number;
}

export interface H2Transport {
  /** Sends over HTTP/2; resolves to 'http/1.1' without sending when the wallet does not speak h2. */
  send(path: string, headers: OutgoingHttpHeaders, body: string, handler: H2Handler): Promise<Negotiated>;
  close(): Promise<void>;
}

class StreamClosed extends Error {
  override readonly name = 'StreamClosed';
  readonly code = 'ERR_HTTP2_STREAM_CLOSED';
}

export function createH2Transport(options: H2TransportOptions): H2Transport {
  const { origin } = options;
  /** The session calls go on; undefined once it ended or got GOAWAY. */
  let live: ClientHttp2Session | undefined;
  let connecting: Promise<ClientHttp2Session | undefined> | undefined;
  /** The wallet picked http/1.1 in ALPN: every call goes through the caller's HTTP/1.1 pool. */
  let http1 = false;
  let closed = false;
  const sessions = new Set<ClientHttp2Session>();
  /** Sessions with a liveness PING out. */
  const checking = new Set<ClientHttp2Session>();

  /** A new session, or undefined when the wallet answered ALPN with http/1.1. */
  function open(): Promise<ClientHttp2Session | undefined> {
    return new Promise((resolve, reject) => {
      const socket: TLSSocket = tlsConnect({
        host: origin.hostname,
        port: Number(origin.port || 443),
        // SNI carries host names only (RFC 6066); a wallet addressed by IP gets none.
        ...(isIP(origin.hostname) === 0 ? { servername: origin.hostname } : {}),
        ALPNProtocols: ['h2', 'http/1.1'],
        rejectUnauthorized: options.rejectUnauthorized,
      });
      const timer = setTimeout(() => socket.destroy(new Error(`no connection within ${options.connectTimeoutMs} ms`)), options.connectTimeoutMs);
      socket.once('error', (err) => {
        clearTimeout(timer);
        reject(err);
      });
      socket.once('secureConnect', () => {
        clearTimeout(timer);
        if (socket.alpnProtocol !== 'h2') {
          http1 = true;
          socket.destroy();
          resolve(undefined);
          return;
        }
        const session = h2connect(origin, { createConnection: () => socket });
        sessions.add(session);
        // Errors reach the streams on the session; the session itself is only dropped.
        session.on('error', () => undefined);
        const drop = (): void => {
          if (live === session) live = undefined;
        };
        session.once('goaway', drop);
        session.once('close', () => {
          sessions.delete(session);
          drop();
        });
        resolve(session);
      });
    });
  }

  function usable(): Promise<ClientHttp2Session | undefined> {
    if (live !== undefined && !live.closed && !live.destroyed) return Promise.resolve(live);
    connecting ??= open()
      .then((session) => (live = session))
      .finally(() => {
        connecting = undefined;
      });
    return connecting;
  }

  /**
   * A call on `session` went unanswered: a PING not answered within the connect timeout ends the
   * session, so a wallet gone silent (a dropped connection that sent no RST) costs the calls in
   * flight, not every call after them. An HTTP/1.1 connection is closed with its timed-out request.
   */
  function checkAlive(session: ClientHttp2Session): void {
    if (session.destroyed || session.closed || checking.has(session)) return;
    const timer = setTimeout(() => session.destroy(new Error(`no PING answer within ${options.connectTimeoutMs} ms`)), options.connectTimeoutMs);
    timer.unref();
    const sent = session.ping((err) => {
      clearTimeout(timer);
      checking.delete(session);
      if (err !== null) session.destroy();
    });
    if (sent) checking.add(session);
    else clearTimeout(timer);
  }

  function start(session: ClientHttp2Session, path: string, headers: OutgoingHttpHeaders, body: string, handler: H2Handler): void {
    // The stream once it exists: the handler may abort before (a call already past its deadline).
    const sent: { stream?: ClientHttp2Stream } = {};
    let done = false;
    handler.onConnect((err) => {
      done = true;
      sent.stream?.close(constants.NGHTTP2_CANCEL);
      if (err !== undefined) handler.onError(err);
      // No error and a stream out: the caller's deadline passed before the answer.
      else if (sent.stream !== undefined) checkAlive(session);
    });
    if (done) return;
    const stream = session.request({ ':method': 'POST', ':path': path, 'content-length': Buffer.byteLength(body), ...headers });
    stream.on('response', (head) => {
      if (!done) handler.onHeaders(Number(head[':status']));
    });
    stream.on('data', (chunk: Buffer) => {
      if (!done) handler.onData(chunk);
    });
    const end = (settle: () => void): void => {
      if (done) return;
      done = true;
      settle();
    };
    stream.on('end', () => end(() => handler.onComplete()));
    stream.on('error', (err) => end(() => handler.onError(err)));
    stream.on('close', () =>
      end(() => handler.onError(new StreamClosed(`stream closed before its answer ended (HTTP/2 code ${stream.rstCode})`))),
    );
    sent.stream = stream;
    stream.end(body);
  }

  return {
    async send(path, headers, body, handler) {
      if (closed) throw new Error('the wallet client is closed');
      if (http1) return 'http/1.1';
      let session = await usable();
      if (session === undefined) return 'http/1.1';
      try {
        start(session, path, headers, body, handler);
      } catch {
        // The session ended between being handed out and the request (GOAWAY, stream ids used
        // up): the request throws before anything is sent, and a fresh session takes it.
        if (live === session) live = undefined;
        session = await usable();
        if (session === undefined) return 'http/1.1';
        start(session, path, headers, body, handler);
      }
      return 'h2';
    },

    async close() {
      closed = true;
      await Promise.all(
        [...sessions].map(
          (session) =>
            new Promise<void>((resolve) => {
              if (session.closed || session.destroyed) resolve();
              else session.close(resolve);
            }),
        ),
      );
    },
  };
}
