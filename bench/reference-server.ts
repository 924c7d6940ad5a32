import cluster from 'node:cluster';
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import Redis from 'ioredis';
import { Pool } from 'undici';
import { loadGatewayConfig } from '../src/config/env';
import { LosslessNumber, jsonNumber, parseJson, stringifyJson } from '../src/lib/json';
import { OPERATION_PATH } from '../src/wallet/protocol';
import { basicAuthHeader, hmacSigner } from '../src/wallet/signer';
import { REFERENCE_CLAIM } from './reference-claim';

/**
 * The bench's yardstick (case b): the least a bet can cost on bare node:http. Parse the JSON, one
 * Redis round trip that claims the transaction id and reads the session, one wallet debit over an
 * undici pool with the gateway's settings, one Redis write of the outcome, answer. A win: the same
 * with a wallet credit that names its bet. A balance: one Redis read of the session, one wallet
 * balance call, answer. No validation
 * beyond what the wallet call needs, no logging, no metrics, no rounds. Not a product: it exists
 * so "how much does the gateway add" has an answer.
 *
 * Reads the gateway's own variables (PORT, REDIS_URL, QUEUE_PREFIX, WALLET_*, PROVIDER_ID,
 * ENGINE_API_KEY, GATEWAY_PROCESSES) and runs that many processes with node:cluster. Sessions are
 * written by the bench at `{QUEUE_PREFIX}:refsession:{id}` as JSON wallet session fields.
 */
const config = loadGatewayConfig();

const ROUTE = /^\/engine\/v1\/sessions\/([^/]+)\/(bet|win|balance)$/;
const MAX_BODY = 16 * 1024;
const RECORD_TTL_SECONDS = config.RECORD_RETENTION_SECONDS;

interface WalletSession {
  token: string;
  player_id: string;
  site_id: string;
  game_id: string;
  currency: string;
}

type ClaimingRedis = Redis & { claim(sessionKey: string, txKey: string, value: string, ttl: number): Promise<[number, string?]> };

function answer(res: ServerResponse, status: number, body: Record<string, unknown>): void {
  const requestId = randomUUID();
  const text = stringifyJson({ ...body, request_id: requestId });
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), 'x-request-id': requestId });
  res.end(text);
}

function failed(res: ServerResponse, status: number, code: string): void {
  answer(res, status, { state: 'failed', error: { code, wallet_code: null, message: code } });
}

function readBody(req: IncomingMessage): Promise<string | undefined> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size <= MAX_BODY) chunks.push(chunk);
    });
    req.on('end', () => resolve(size > MAX_BODY ? undefined : Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

function serve(): void {
  const prefix = config.QUEUE_PREFIX;
  // The bench serves the one wallet and engine of the single-wallet variables.
  const wallet = config.registry.wallets[0]!;
  const w = wallet.client;
  const redis = new Redis(config.REDIS_URL) as ClaimingRedis;
  redis.defineCommand('claim', { numberOfKeys: 2, lua: REFERENCE_CLAIM });
  // The wallet client's HTTP/1.1 pool settings (src/wallet/client.ts); the bench runs this case over HTTP/1.1 only.
  const pool = new Pool(w.WALLET_BASE_URL, {
    connections: w.WALLET_CONNECTIONS,
    pipelining: 1,
    connectTimeout: w.WALLET_TIMEOUT_MS,
    headersTimeout: w.WALLET_TIMEOUT_MS,
    bodyTimeout: w.WALLET_TIMEOUT_MS,
  });
  const signer = hmacSigner(w.WALLET_SIGNING_SECRET, w.WALLET_SIGNATURE_ALGO, w.WALLET_SIGNATURE_ENCODING);
  const authorization = basicAuthHeader(w.WALLET_BASIC_USER, w.WALLET_BASIC_PASSWORD);
  const bearer = `Bearer ${config.registry.engines[0]!.keys[0]}`;
  const walletPrefix = new URL(w.WALLET_BASE_URL).pathname.replace(/\/+$/, '');
  const debitPath = walletPrefix + OPERATION_PATH.debit;
  const creditPath = walletPrefix + OPERATION_PATH.credit;
  const balancePath = walletPrefix + OPERATION_PATH.balance;

  function walletPost(path: string, body: string): Promise<{ status?: unknown; code?: unknown; balance?: unknown }> {
    return pool
      .request({
        path,
        method: 'POST',
        headers: ['content-type', 'application/json', 'accept', 'application/json', 'authorization', authorization, 'x-request-signature', signer.sign(body)],
        body,
      })
      .then(async (answer) => parseJson(await answer.body.text()) as { status?: unknown; code?: unknown; balance?: unknown });
  }

  /** The session's part of every wallet request body. */
  function sessionFields(session: WalletSession): Record<string, unknown> {
    return {
      token: session.token,
      player_id: jsonNumber(session.player_id),
      site_id: jsonNumber(session.site_id),
      provider_id: jsonNumber(wallet.providerId),
      game_id: session.game_id,
      currency: session.currency,
    };
  }

  /** A balance: one Redis read of the session, one wallet balance call, answer. */
  async function readBalance(sessionId: string, req: IncomingMessage, res: ServerResponse): Promise<void> {
    req.resume();
    const sessionText = await redis.get(`${prefix}:refsession:${sessionId}`);
    if (sessionText === null) return failed(res, 404, 'SESSION_NOT_FOUND');
    const session = JSON.parse(sessionText) as WalletSession;
    const result = await walletPost(
      balancePath,
      stringifyJson(sessionFields(session)),
    );
    if (result.status !== true) return answer(res, 422, { state: 'failed', error: { code: 'WALLET_REJECTED', wallet_code: result.code ?? null, message: 'refused' } });
    answer(res, 200, { balance: result.balance, currency: session.currency });
  }

  /** A bet (debit) or a win (credit naming its bet): claim, one wallet call, one write, answer. */
  async function transact(kind: 'bet' | 'win', sessionId: string, req: IncomingMessage, res: ServerResponse): Promise<void> {
    const raw = await readBody(req);
    if (raw === undefined) return failed(res, 413, 'PAYLOAD_TOO_LARGE');
    const body = parseJson(raw) as { round_id?: unknown; transaction_id?: unknown; bet_transaction_id?: unknown; amount?: unknown };
    const { round_id: roundId, transaction_id: txId, bet_transaction_id: betTxId, amount } = body;
    if (typeof roundId !== 'string' || typeof txId !== 'string' || !(amount instanceof LosslessNumber) || (kind === 'win' && typeof betTxId !== 'string')) {
      return failed(res, 400, 'VALIDATION_FAILED');
    }
    const txKey = `${prefix}:reftx:${txId}`;
    const [claimed, sessionText] = await redis.claim(`${prefix}:refsession:${sessionId}`, txKey, raw, RECORD_TTL_SECONDS);
    if (claimed === 0) return failed(res, 404, 'SESSION_NOT_FOUND');
    if (claimed === 1) return failed(res, 409, 'IN_PROGRESS');
    const session = JSON.parse(sessionText as string) as WalletSession;

    const fields: Record<string, unknown> = { ...sessionFields(session), amount, round_id: roundId, transaction_id: txId, round_closed: kind === 'win' };
    if (kind === 'win') fields.reference_transaction_id = betTxId;
    const result = await walletPost(kind === 'bet' ? debitPath : creditPath, stringifyJson(fields));
    const ok = result.status === true && result.code instanceof LosslessNumber && result.code.value === '1';
    const balance = result.balance instanceof LosslessNumber ? result.balance : null;
    await redis.set(txKey, stringifyJson({ state: ok ? 'succeeded' : 'failed', balance, code: result.code }), 'EX', RECORD_TTL_SECONDS);
    if (!ok) return answer(res, 422, { state: 'failed', error: { code: 'WALLET_REJECTED', wallet_code: result.code ?? null, message: 'refused' } });
    answer(res, 200, { state: 'succeeded', transaction_id: txId, balance, currency: session.currency });
  }

  const server = createServer((req, res) => {
    const match = req.method === 'POST' ? ROUTE.exec(req.url ?? '') : null;
    if (match === null) {
      req.resume();
      return req.url === '/healthz' ? answer(res, 200, { ok: true }) : failed(res, 404, 'NOT_FOUND');
    }
    if (req.headers.authorization !== bearer) {
      req.resume();
      return failed(res, 401, 'UNAUTHORIZED');
    }
    const op = match[2] as 'bet' | 'win' | 'balance';
    (op === 'balance' ? readBalance(match[1] as string, req, res) : transact(op, match[1] as string, req, res)).catch(() => failed(res, 503, 'WALLET_UNAVAILABLE'));
  });
  server.keepAliveTimeout = 60_000;
  server.listen(config.PORT, '127.0.0.1');

  process.once('SIGTERM', () => {
    server.close();
    server.closeAllConnections();
    void Promise.allSettled([pool.close(), redis.quit()]).then(() => process.exit(0));
  });
}

if (config.GATEWAY_PROCESSES > 1 && cluster.isPrimary) {
  for (let i = 0; i < config.GATEWAY_PROCESSES; i += 1) cluster.fork();
  process.once('SIGTERM', () => {
    for (const worker of Object.values(cluster.workers ?? {})) worker?.process.kill('SIGTERM');
    cluster.on('exit', () => {
      if (Object.keys(cluster.workers ?? {}).length === 0) process.exit(0);
    });
  });
} else {
  serve();
}
