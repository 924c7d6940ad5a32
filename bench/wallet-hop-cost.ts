import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:http2';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../src/lib/free-port';
import { selfSignedCert } from '../src/lib/self-signed-cert';
import { waitFor } from '../src/lib/wait-for';
import { createWalletClient } from '../src/wallet/client';
import { hmacSigner } from '../src/wallet/signer';
import { runToExit } from './in-process';

/**
 * `npx tsx bench/wallet-hop-cost.ts [calls] [concurrency]`: the CPU one wallet call costs the
 * caller, by transport, against one TLS server (HTTP/2 with HTTP/1.1 allowed) in a child process
 * that answers every POST with a fixed success body. The gateway's wallet client over HTTP/1.1 and
 * over HTTP/2, and node:http2 on its own as the floor of an HTTP/2 exchange. docs/performance.md
 * ("HTTP/2") keeps the numbers.
 */
const calls = Number(process.argv[2] ?? 15_000);
const concurrency = Number(process.argv[3] ?? 64);

const ANSWER = JSON.stringify({ status: true, code: 1, message: 'ok', request_id: 'r', token: 't', player_id: 1, game_id: 'g', site_id: 1, provider_id: 1, balance: '100.00' });
const BODY = '{"token":"tok","player_id":18446744073709551615,"site_id":1,"provider_id":1,"game_id":"g","currency":"EUR","amount":1.00,"round_id":"r-1","transaction_id":"t-1","round_closed":false}';

function serverSource(cert: string, key: string, port: number): string {
  return `
const h2 = require('node:http2'); const fs = require('node:fs');
const answer = ${JSON.stringify(ANSWER)};
h2.createSecureServer({ cert: fs.readFileSync(${JSON.stringify(cert)}), key: fs.readFileSync(${JSON.stringify(key)}), allowHTTP1: true }, (req, res) => {
  req.resume();
  req.on('end', () => { res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(answer) }); res.end(answer); });
}).listen(${port}, '127.0.0.1');`;
}

/** `calls` calls, `concurrency` at a time, after as many unmeasured: req/s and this process's CPU µs per call. */
async function drive(call: () => Promise<unknown>): Promise<string> {
  const run = async (): Promise<void> => {
    let next = 0;
    const lane = async (): Promise<void> => {
      while (next++ < calls) await call();
    };
    await Promise.all(Array.from({ length: concurrency }, lane));
  };
  await run();
  const cpu = process.cpuUsage();
  const started = performance.now();
  await run();
  const used = process.cpuUsage(cpu);
  const seconds = (performance.now() - started) / 1000;
  return `${Math.round(calls / seconds)} calls/s, ${Math.round((used.user + used.system) / calls)} µs CPU per call`;
}

function walletClient(url: string, http2: boolean) {
  return createWalletClient({
    settings: {
      WALLET_BASE_URL: url,
      WALLET_BASIC_USER: 'u',
      WALLET_BASIC_PASSWORD: 'p',
      WALLET_SIGNING_SECRET: 's',
      WALLET_SIGNATURE_ALGO: 'sha256',
      WALLET_SIGNATURE_ENCODING: 'hex',
      WALLET_TIMEOUT_MS: 10_000,
      WALLET_CONNECTIONS: 64,
      WALLET_HTTP2: http2,
      WALLET_TLS_INSECURE: true,
      walletHostHeader: '127.0.0.1',
    },
    signer: hmacSigner('s', 'sha256', 'hex'),
  });
}

function rawHttp2(url: string): { call: () => Promise<void>; close: () => void } {
  const session = connect(url, { rejectUnauthorized: false });
  // A refused connect fails the calls on the session (each stream errors); nothing else to do here.
  session.on('error', () => undefined);
  const call = (): Promise<void> =>
    new Promise((resolve, reject) => {
      const stream = session.request({ ':method': 'POST', ':path': '/api/wallet/debit', 'content-type': 'application/json' });
      stream.setEncoding('utf8');
      let text = '';
      stream.on('data', (chunk: string) => (text += chunk));
      stream.on('end', () => (JSON.parse(text) as unknown, resolve()));
      stream.on('error', reject);
      stream.end(BODY);
    });
  return { call, close: () => session.close() };
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'wgw-hop-'));
  const { cert, key } = selfSignedCert();
  const files = { cert: join(dir, 'cert.pem'), key: join(dir, 'key.pem') };
  writeFileSync(files.cert, cert);
  writeFileSync(files.key, key, { mode: 0o600 });
  const port = await freePort();
  const server = spawn(process.execPath, ['-e', serverSource(files.cert, files.key, port)], { stdio: 'inherit' });
  const url = `https://127.0.0.1:${port}`;
  try {
    await waitFor(
      'TLS server',
      async () => {
        const probe = rawHttp2(url);
        const up = await probe.call().then(() => true, () => false);
        probe.close();
        return up;
      },
      10_000,
    );
    console.log(`${calls} calls, ${concurrency} at a time, node ${process.version}`);
    for (let round = 1; round <= 2; round += 1) {
      for (const http2 of [false, true]) {
        const client = walletClient(url, http2);
        console.log(`round ${round}  wallet client, ${http2 ? 'HTTP/2         ' : 'HTTP/1.1 over TLS'}: ${await drive(() => client.send('debit', BODY))}`);
        await client.close();
      }
      const raw = rawHttp2(url);
      console.log(`round ${round}  node:http2 alone             : ${await drive(raw.call)}`);
      raw.close();
    }
  } finally {
    server.kill();
    rmSync(dir, { recursive: true, force: true });
  }
}

runToExit(main);
