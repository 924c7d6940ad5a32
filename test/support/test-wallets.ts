import { createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { startSimulator, type Ledger, type RunningSimulator, type SimulatorOptions } from '../../src/sim';
import { CallLog } from '../../src/sim/calls';
import { Faults } from '../../src/sim/faults';
import { createHandler } from '../../src/sim/handler';
import { SimWallet, type WalletResult } from '../../src/sim/wallet';
import type { Operation, RequestFields } from '../../src/wallet/protocol';
import { basicAuthHeader, hmacSigner } from '../../src/wallet/signer';

/**
 * Wallets with one defect each, for the wallet check's tests: the bundled simulator with one rule
 * broken, built from its own parts (no copy of it).
 */
export interface TestWallet {
  readonly url: string;
  readonly ledger: Ledger;
  close(): Promise<void>;
}

type Credentials = Pick<SimulatorOptions, 'basicUser' | 'basicPassword' | 'signingSecret'>;

/** The simulator with a signer that signs as configured but takes any signature. */
export function startSignatureBlindWallet(credentials: Credentials): Promise<RunningSimulator> {
  const signer = hmacSigner(credentials.signingSecret, 'sha256', 'hex');
  return startSimulator({ ...credentials, signer: { sign: signer.sign, verify: () => true } });
}

/** The simulator's books, except that a repeated debit is applied again (as a new debit of its own round). */
class DoubleDebitWallet extends SimWallet {
  override handle<Op extends Operation>(op: Op, fields: RequestFields[Op]): WalletResult {
    if (op !== 'debit' || this.transaction((fields as RequestFields['debit']).transaction_id) === undefined) return super.handle(op, fields);
    const debit = fields as RequestFields['debit'];
    return super.handle('debit', { ...debit, transaction_id: `${debit.transaction_id}+again`, round_id: `${debit.round_id}+again` });
  }
}

/** The simulator's handler over DoubleDebitWallet, on a free loopback port. */
export async function startDoubleDebitWallet(credentials: Credentials): Promise<TestWallet> {
  const wallet = new DoubleDebitWallet({ startBalance: '1000.00', currencyDigits: {} });
  let expectedHost = '';
  const handler = createHandler({
    wallet,
    faults: new Faults(),
    calls: new CallLog(),
    signer: hmacSigner(credentials.signingSecret, 'sha256', 'hex'),
    authorization: basicAuthHeader(credentials.basicUser, credentials.basicPassword),
    hostAllowed: (host) => host === expectedHost,
  });
  const server = createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  expectedHost = `127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url: `http://${expectedHost}`,
    ledger: wallet,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/**
 * The simulator behind a proxy that reads every answer's player_id as a double, as a wallet written
 * in JavaScript without a lossless parser would: 18446744073709551615 comes back 18446744073709552000.
 */
export async function startIdRoundingWallet(sim: RunningSimulator): Promise<TestWallet> {
  const target = new URL(sim.url);
  const server = createServer((req, res) => {
    const upstream = request(
      { host: target.hostname, port: target.port, method: req.method, path: req.url, headers: { ...req.headers, host: target.host } },
      (answer) => {
        const chunks: Buffer[] = [];
        answer.on('data', (chunk: Buffer) => chunks.push(chunk));
        answer.on('end', () => {
          const body = Buffer.concat(chunks)
            .toString('utf8')
            .replace(/"player_id":([0-9]+)/, (_all, digits: string) => `"player_id":${BigInt(Number(digits)).toString()}`);
          res.writeHead(answer.statusCode ?? 502, { 'content-type': answer.headers['content-type'] ?? 'application/json' });
          res.end(body);
        });
      },
    );
    req.pipe(upstream);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    ledger: sim.ledger,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
