import { createServer, type Server } from 'node:http';
import { createSecureServer, type Http2SecureServer, type Http2Session } from 'node:http2';
import type { AddressInfo, Socket } from 'node:net';
import { basicAuthHeader, hmacSigner, type RequestSigner, type SignatureAlgo, type SignatureEncoding } from '../wallet/signer';
import { CallLog, type RecordedCall } from './calls';
import { Faults, type ChaosSettings, type FaultController } from './faults';
import { createHandler, type AnyRequest, type AnyResponse } from './handler';
import { SimWallet, type Ledger } from './wallet';

/**
 * The bundled wallet simulator: a spec-faithful wallet server (wallet-service-spec.md) with fault
 * injection, for tests, the demo and `npm run sim`. Choices the spec leaves open: docs/simulator.md.
 */
export type { RecordedCall } from './calls';
export type { ChaosSettings, DropMode, FaultController, FaultSnapshot } from './faults';
export type { Ledger, PlayerView, TransactionView, TransactionStatus } from './wallet';

export interface SimulatorOptions {
  /** 0 = a random free port (the default, for tests). */
  port?: number;
  /** Default 127.0.0.1. */
  host?: string;
  basicUser: string;
  basicPassword: string;
  signingSecret: string;
  signatureAlgo?: SignatureAlgo;
  signatureEncoding?: SignatureEncoding;
  /** Overrides the HMAC signer (the signature scheme is pluggable). */
  signer?: RequestSigner;
  /** Decimal text; default '1000.00'. */
  startBalance?: string;
  /** Fraction digits per currency; 2 for any currency not listed. */
  currencyDigits?: Record<string, number>;
  /** Then HTTP/2 over TLS, with HTTP/1.1 for clients that do not offer h2. */
  tls?: { cert: string | Buffer; key: string | Buffer };
  /** Seeded random faults from the start. */
  chaos?: ChaosSettings;
  /** Host the health check must carry; default: host:port it listens on, 127.0.0.1:port or localhost:port. */
  expectedHost?: string;
}

export interface RunningSimulator {
  /** Base URL, e.g. http://127.0.0.1:PORT or https://127.0.0.1:PORT. */
  readonly url: string;
  readonly port: number;
  readonly faults: FaultController;
  readonly ledger: Ledger;
  calls(): readonly RecordedCall[];
  /** The calls of the seven wallet operations, without health checks (a gateway asks those on its own). */
  walletCalls(): readonly RecordedCall[];
  clearCalls(): void;
  close(): Promise<void>;
}

const DECIMAL = /^(0|[1-9][0-9]*)(\.[0-9]+)?$/;
const WILDCARD_HOSTS = new Set(['0.0.0.0', '::', '']);

function hostMatcher(listenHost: string, port: number, expected: string | undefined): (host: string | undefined) => boolean {
  if (expected !== undefined) return (host) => host?.toLowerCase() === expected.toLowerCase();
  // Bound to every interface, any name that reaches this port is "the host it listens on".
  if (WILDCARD_HOSTS.has(listenHost)) return (host) => host?.endsWith(`:${port}`) === true;
  const allowed = new Set([`${listenHost}:${port}`, `127.0.0.1:${port}`, `localhost:${port}`, `[::1]:${port}`].map((h) => h.toLowerCase()));
  return (host) => host !== undefined && allowed.has(host.toLowerCase());
}

function listen(server: Server | Http2SecureServer, port: number, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve((server.address() as AddressInfo).port);
    });
  });
}

export async function startSimulator(options: SimulatorOptions): Promise<RunningSimulator> {
  const startBalance = options.startBalance ?? '1000.00';
  if (!DECIMAL.test(startBalance)) throw new RangeError(`startBalance must be decimal text, got ${startBalance}`);
  const host = options.host ?? '127.0.0.1';
  const wallet = new SimWallet({ startBalance, currencyDigits: options.currencyDigits ?? {} });
  const faults = new Faults();
  if (options.chaos) faults.chaos(options.chaos);
  const calls = new CallLog();
  const signer = options.signer ?? hmacSigner(options.signingSecret, options.signatureAlgo ?? 'sha256', options.signatureEncoding ?? 'hex');

  // Known once listening; no request arrives before that.
  let hostAllowed: (host: string | undefined) => boolean = () => false;
  const handler = createHandler({
    wallet,
    faults,
    calls,
    signer,
    authorization: basicAuthHeader(options.basicUser, options.basicPassword),
    hostAllowed: (h) => hostAllowed(h),
  });

  let server: Server | Http2SecureServer;
  // Open connections are tracked so close() can end them, hung exchanges included.
  const sockets = new Set<Socket>();
  const sessions = new Set<Http2Session>();
  if (options.tls) {
    const secure = createSecureServer({ cert: options.tls.cert, key: options.tls.key, allowHTTP1: true }, (req, res) =>
      handler(req as AnyRequest, res as AnyResponse),
    );
    secure.on('secureConnection', (socket: Socket) => {
      sockets.add(socket);
      socket.once('close', () => sockets.delete(socket));
    });
    secure.on('session', (session: Http2Session) => {
      sessions.add(session);
      session.once('close', () => sessions.delete(session));
    });
    server = secure;
  } else {
    server = createServer(handler);
  }
  const port = await listen(server, options.port ?? 0, host);
  hostAllowed = hostMatcher(host, port, options.expectedHost);
  const urlHost = WILDCARD_HOSTS.has(host) ? '127.0.0.1' : host.includes(':') ? `[${host}]` : host;

  let closing: Promise<void> | undefined;
  return {
    url: `${options.tls ? 'https' : 'http'}://${urlHost}:${port}`,
    port,
    faults,
    ledger: wallet,
    calls: () => calls.list(),
    walletCalls: () => calls.list().filter((c) => c.operation !== 'health-check'),
    clearCalls: () => calls.clear(),
    close() {
      closing ??= new Promise<void>((resolve) => {
        server.close(() => resolve());
        if ('closeAllConnections' in server) server.closeAllConnections();
        for (const session of sessions) session.destroy();
        for (const socket of sockets) socket.destroy();
      });
      return closing;
    },
  };
}
