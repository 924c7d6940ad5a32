import { randomUUID } from 'node:crypto';
import { Agent, request, type Dispatcher } from 'undici';
import { parseJson, stringifyJson } from '../../src/lib/json';
import { startSimulator, type RunningSimulator } from '../../src/sim';
import { Code, walletHttpStatus } from '../../src/wallet/codes';
import {
  OPERATION_PATH,
  encodeRequest,
  type CreditFields,
  type DebitFields,
  type Operation,
  type RequestFields,
  type SessionFields,
  type StatusFields,
} from '../../src/wallet/protocol';
import { basicAuthHeader, hmacSigner } from '../../src/wallet/signer';
import { selfSignedCert } from '../../src/lib/self-signed-cert';

const USER = 'sim-user';
const PASSWORD = 'sim-password';
const SECRET = 'sim-secret';
const U64_MAX = '18446744073709551615';
const signer = hmacSigner(SECRET, 'sha256', 'hex');
const SUCCESS_KEYS = ['balance', 'code', 'game_id', 'message', 'player_id', 'provider_id', 'request_id', 'site_id', 'status', 'token'];

interface Answer {
  status: number;
  text: string;
  json: Record<string, unknown>;
}

let seq = 0;
function newSession(overrides: Partial<SessionFields> = {}): SessionFields {
  seq += 1;
  return {
    token: randomUUID(),
    player_id: String(5_000_000_000_000_000_000n + BigInt(seq)),
    site_id: '11',
    provider_id: '77',
    game_id: '4242',
    currency: 'EUR',
    ...overrides,
  };
}

const debitOf = (s: SessionFields, amount: string, extra: Partial<DebitFields> = {}): DebitFields => ({
  ...s,
  amount,
  round_id: randomUUID(),
  transaction_id: randomUUID(),
  round_closed: false,
  ...extra,
});

const creditOf = (debit: DebitFields, amount: string, extra: Partial<CreditFields> = {}): CreditFields => ({
  ...debit,
  amount,
  transaction_id: randomUUID(),
  reference_transaction_id: debit.transaction_id,
  round_closed: false,
  ...extra,
});

const statusOf = (tx: DebitFields | CreditFields, action: StatusFields['action']): StatusFields => ({
  token: tx.token,
  player_id: tx.player_id,
  site_id: tx.site_id,
  provider_id: tx.provider_id,
  game_id: tx.game_id,
  currency: tx.currency,
  amount: tx.amount,
  round_id: tx.round_id,
  transaction_id: tx.transaction_id,
  action,
});

async function read(res: Dispatcher.ResponseData): Promise<Answer> {
  const text = await res.body.text();
  let json: Record<string, unknown> = {};
  if (text !== '' && (res.headers['content-type'] ?? '').toString().startsWith('application/json')) {
    json = parseJson(text) as Record<string, unknown>;
  }
  return { status: res.statusCode, text, json };
}

/** Posts raw bytes with the given (or correct) auth headers. */
async function postRaw(
  baseUrl: string,
  path: string,
  body: string,
  options: { authorization?: string; signature?: string; dispatcher?: Dispatcher; timeoutMs?: number; headers?: Record<string, string> } = {},
): Promise<Answer> {
  const res = await request(`${baseUrl}${path}`, {
    method: 'POST',
    body,
    dispatcher: options.dispatcher,
    // An abort signal rather than headersTimeout: undici's own timers tick about once a second.
    signal: options.timeoutMs === undefined ? undefined : AbortSignal.timeout(options.timeoutMs),
    headers: {
      'content-type': 'application/json',
      accept: 'application/json',
      authorization: options.authorization ?? basicAuthHeader(USER, PASSWORD),
      'x-request-signature': options.signature ?? signer.sign(body),
      ...options.headers,
    },
  });
  return read(res);
}

function callOn<Op extends Operation>(
  baseUrl: string,
  op: Op,
  fields: RequestFields[Op],
  options: { dispatcher?: Dispatcher; timeoutMs?: number } = {},
): Promise<Answer> {
  return postRaw(baseUrl, OPERATION_PATH[op], encodeRequest(op, fields), options);
}

function text(value: unknown): string {
  return String(value);
}

describe('wallet simulator', () => {
  let sim: RunningSimulator;
  const call = <Op extends Operation>(op: Op, fields: RequestFields[Op], options?: { timeoutMs?: number }): Promise<Answer> =>
    callOn(sim.url, op, fields, options);
  const session = async (overrides: Partial<SessionFields> = {}): Promise<SessionFields> => {
    const s = newSession(overrides);
    expect((await call('authenticate', s)).json.code).toEqual(expect.anything());
    return s;
  };
  const codeOf = (a: Answer): string => text(a.json.code);

  beforeAll(async () => {
    sim = await startSimulator({ basicUser: USER, basicPassword: PASSWORD, signingSecret: SECRET, currencyDigits: { JPY: 0 } });
  });
  afterEach(() => sim.faults.clear());
  afterAll(() => sim.close());

  describe('operations', () => {
    it('serves every operation with the spec success shape', async () => {
      const s = newSession();
      const auth = await call('authenticate', s);
      expect(auth.status).toBe(200);
      expect(Object.keys(auth.json).sort()).toEqual(SUCCESS_KEYS);
      expect(auth.json).toMatchObject({ status: true, message: '', token: s.token });
      expect(codeOf(auth)).toBe('1');
      expect(auth.json.request_id).toMatch(/^[0-9a-f-]{36}$/);
      expect(text(auth.json.balance)).toBe('1000.00');
      expect(text(auth.json.provider_id)).toBe('77');

      expect(text((await call('balance', s)).json.balance)).toBe('1000.00');
      const debit = debitOf(s, '10.50');
      expect(text((await call('debit', debit)).json.balance)).toBe('989.50');
      const credit = creditOf(debit, '25', { round_closed: true });
      expect(text((await call('credit', credit)).json.balance)).toBe('1014.50');

      const applied = await call('status', statusOf(debit, 'debit'));
      expect(applied.json).toMatchObject({ status: true, transaction_status: 'applied' });
      expect(text(applied.json.balance)).toBe('1014.50');

      const bet = debitOf(s, '14.50');
      await call('debit', bet);
      const rollback = creditOf(bet, '14.50');
      expect(text((await call('rollback', rollback)).json.balance)).toBe('1014.50');
      expect((await call('status', statusOf(bet, 'debit'))).json.transaction_status).toBe('rolled_back');
      expect((await call('status', statusOf(rollback, 'rollback'))).json.transaction_status).toBe('applied');

      const end = await call('terminate', s);
      expect(end.json.status).toBe(true);
      expect(text(end.json.balance)).toBe('1014.50');
      expect(sim.ledger.balanceOf(s.player_id)).toBe('1014.50');
    });

    it('writes site_id and game_id as numbers in some answers and strings in others', async () => {
      const s = await session();
      const answers = [await call('balance', s), await call('balance', s)];
      const forms = answers.map((a) => [typeof a.json.site_id, typeof a.json.game_id]);
      expect(forms).toContainEqual(['string', 'object']);
      expect(forms).toContainEqual(['object', 'string']);
    });

    it('echoes ids up to 2^64-1 exactly', async () => {
      const s = newSession({ player_id: U64_MAX, site_id: U64_MAX, provider_id: U64_MAX });
      const auth = await call('authenticate', s);
      expect(auth.text).toContain(`"player_id":${U64_MAX}`);
      expect(auth.text).toContain(`"provider_id":${U64_MAX}`);
      expect(auth.text).toMatch(new RegExp(`"site_id":"?${U64_MAX}"?`));
      expect(sim.ledger.balanceOf(U64_MAX)).toBe('1000.00');
    });

    it('keeps balances exact in each currency’s minor units', async () => {
      const s = await session({ currency: 'JPY' });
      expect(text((await call('debit', debitOf(s, '300'))).json.balance)).toBe('700');
      const tooFine = await call('debit', debitOf(s, '0.5'));
      expect(codeOf(tooFine)).toBe(String(Code.Validation));
      expect(tooFine.json.message).toMatch(/^amount:/);
    });
  });

  describe('authentication and validation', () => {
    it('refuses wrong Basic credentials with 101 and a wrong signature with 102, applying nothing', async () => {
      const s = await session();
      const body = encodeRequest('debit', debitOf(s, '5'));
      const noAuth = await postRaw(sim.url, OPERATION_PATH.debit, body, { authorization: basicAuthHeader(USER, 'wrong') });
      expect(noAuth.status).toBe(walletHttpStatus(Code.InvalidCredentials));
      expect(Object.keys(noAuth.json).sort()).toEqual(['code', 'message', 'request_id', 'status']);
      expect(noAuth.json).toMatchObject({ status: false });
      expect(codeOf(noAuth)).toBe(String(Code.InvalidCredentials));

      const badSig = await postRaw(sim.url, OPERATION_PATH.debit, body, { signature: signer.sign(`${body} `) });
      expect(badSig.status).toBe(walletHttpStatus(Code.InvalidSignature));
      expect(codeOf(badSig)).toBe(String(Code.InvalidSignature));
      expect(sim.ledger.balanceOf(s.player_id)).toBe('1000.00');
    });

    it('verifies with a pluggable signer', async () => {
      const other = await startSimulator({
        basicUser: USER,
        basicPassword: PASSWORD,
        signingSecret: 'unused',
        signer: { sign: () => 'fixed', verify: (_body, signature) => signature === 'fixed' },
      });
      try {
        const body = encodeRequest('authenticate', newSession());
        expect((await postRaw(other.url, OPERATION_PATH.authenticate, body, { signature: 'fixed' })).status).toBe(200);
        expect((await postRaw(other.url, OPERATION_PATH.authenticate, body)).status).toBe(walletHttpStatus(Code.InvalidSignature));
      } finally {
        await other.close();
      }
    });

    it('answers 103 naming the field for a malformed body', async () => {
      const s = newSession();
      const missing = await postRaw(sim.url, OPERATION_PATH.authenticate, stringifyJson({ ...s, token: undefined }));
      expect(codeOf(missing)).toBe(String(Code.Validation));
      expect(missing.status).toBe(walletHttpStatus(Code.Validation));
      expect(missing.json.message).toMatch(/^token:/);
      const overflow = await postRaw(sim.url, OPERATION_PATH.authenticate, encodeRequest('authenticate', { ...s, player_id: '18446744073709551616' }));
      expect(overflow.json.message).toMatch(/^player_id:/);
      const junk = await postRaw(sim.url, OPERATION_PATH.authenticate, '{"token":');
      expect(junk.json.message).toMatch(/^body: not JSON/);
    });
  });

  describe('tokens', () => {
    it('needs authenticate first, binds the token to its first player, site and currency, and allows a refresh', async () => {
      const s = newSession();
      expect(codeOf(await call('balance', s))).toBe(String(Code.InvalidToken));
      expect(codeOf(await call('authenticate', s))).toBe('1');
      expect(codeOf(await call('authenticate', s))).toBe('1');
      const stranger = newSession({ token: s.token });
      expect(codeOf(await call('authenticate', stranger))).toBe(String(Code.InvalidToken));
      expect(codeOf(await call('balance', { ...s, site_id: '12' }))).toBe(String(Code.InvalidToken));
      expect(codeOf(await call('balance', { ...s, currency: 'USD' }))).toBe(String(Code.InvalidToken));
    });

    it('refuses everything with 105 after terminate, authenticate included', async () => {
      const s = await session();
      expect(codeOf(await call('terminate', s))).toBe('1');
      for (const op of ['balance', 'authenticate', 'terminate'] as const) {
        const answer = await call(op, s);
        expect(codeOf(answer)).toBe(String(Code.TokenDeactivated));
        expect(answer.status).toBe(walletHttpStatus(Code.TokenDeactivated));
      }
      expect(codeOf(await call('debit', debitOf(s, '1')))).toBe(String(Code.TokenDeactivated));
    });
  });

  describe('rounds and transactions', () => {
    it('accepts one debit per round (108) and refuses overdrafts (106)', async () => {
      const s = await session();
      const first = debitOf(s, '1');
      await call('debit', first);
      expect(codeOf(await call('debit', debitOf(s, '1', { round_id: first.round_id })))).toBe(String(Code.RoundHasDebit));
      expect(codeOf(await call('debit', debitOf(s, '1000.00')))).toBe(String(Code.InsufficientFunds));
      expect(sim.ledger.balanceOf(s.player_id)).toBe('999.00');
    });

    it('locks a closed round for debit, credit and rollback (107)', async () => {
      const s = await session();
      const debit = debitOf(s, '2', { round_closed: true });
      await call('debit', debit);
      expect(codeOf(await call('credit', creditOf(debit, '1')))).toBe(String(Code.RoundClosed));
      expect(codeOf(await call('rollback', creditOf(debit, '2')))).toBe(String(Code.RoundClosed));
      expect(codeOf(await call('debit', debitOf(s, '1', { round_id: debit.round_id })))).toBe(String(Code.RoundClosed));
      expect(sim.ledger.balanceOf(s.player_id)).toBe('998.00');
    });

    it('answers a repeated transaction_id with the original success and applies nothing; other fields conflict (109)', async () => {
      const s = await session();
      const debit = debitOf(s, '10', { round_closed: true });
      await call('debit', debit);
      await call('balance', s);
      // Same fields (amount written differently, a newer token of the same player): the original success.
      const refreshed = await session({ player_id: s.player_id });
      const repeat = await call('debit', { ...debit, token: refreshed.token, amount: '10.00' });
      expect(codeOf(repeat)).toBe('1');
      expect(text(repeat.json.balance)).toBe('990.00');
      expect(sim.ledger.appliedCount(debit.transaction_id)).toBe(1);

      const conflict = await call('debit', { ...debit, amount: '11' });
      expect(codeOf(conflict)).toBe(String(Code.TransactionConflict));
      expect(sim.ledger.balanceOf(s.player_id)).toBe('990.00');
    });

    it('rolls a debit back, idempotently, and refuses unknown debits (34), wrong amounts (110) and orphan credits (39)', async () => {
      const s = await session();
      const debit = debitOf(s, '30');
      await call('debit', debit);
      expect(codeOf(await call('rollback', creditOf(debit, '29')))).toBe(String(Code.AmountMismatch));
      const unknown = creditOf(debitOf(s, '30', { round_id: debit.round_id }), '30');
      const notFound = await call('rollback', unknown);
      expect(codeOf(notFound)).toBe(String(Code.TransactionNotFound));
      expect(notFound.status).toBe(walletHttpStatus(Code.TransactionNotFound));
      expect(sim.ledger.transaction(unknown.transaction_id)).toBeUndefined();

      expect(text((await call('rollback', creditOf(debit, '30'))).json.balance)).toBe('1000.00');
      // Another rollback of the same debit: success, nothing more restored.
      expect(text((await call('rollback', creditOf(debit, '30'))).json.balance)).toBe('1000.00');
      expect(sim.ledger.transaction(debit.transaction_id)).toMatchObject({ op: 'debit', rolledBack: true, timesApplied: 1 });

      const orphan = creditOf(debitOf(s, '1'), '5');
      expect(codeOf(await call('credit', orphan))).toBe(String(Code.BetTransactionNotFoundInRound));
      expect(sim.ledger.balanceOf(s.player_id)).toBe('1000.00');
    });

    it('reports status applied or not applied (34)', async () => {
      const s = await session();
      const debit = debitOf(s, '3');
      expect(codeOf(await call('status', statusOf(debit, 'debit')))).toBe(String(Code.TransactionNotFound));
      await call('debit', debit);
      const applied = await call('status', statusOf(debit, 'debit'));
      expect(applied.json).toMatchObject({ status: true, transaction_status: 'applied' });
      expect(codeOf(await call('status', statusOf(debit, 'credit')))).toBe(String(Code.TransactionNotFound));
    });
  });

  describe('faults', () => {
    it('failNext answers a code without applying, optionally for one transaction only', async () => {
      const s = await session();
      const target = debitOf(s, '5');
      sim.faults.failNext('debit', 1, Code.InternalServiceError, { transactionId: target.transaction_id });
      expect(codeOf(await call('debit', debitOf(s, '1')))).toBe('1');
      const failed = await call('debit', target);
      expect(codeOf(failed)).toBe(String(Code.InternalServiceError));
      expect(failed.status).toBe(500);
      expect(sim.ledger.transaction(target.transaction_id)).toBeUndefined();
      expect(codeOf(await call('debit', target))).toBe('1');
      expect(sim.calls().filter((c) => c.transactionId === target.transaction_id).map((c) => [c.fault, c.code, c.applied])).toEqual([
        ['fail', Code.InternalServiceError, false],
        [undefined, 1, true],
      ]);
    });

    it('applyThenDrop applies the call and then hangs or resets', async () => {
      const s = await session();
      sim.faults.applyThenDrop('debit', 1, { mode: 'hang' });
      const hung = debitOf(s, '4');
      await expect(call('debit', hung, { timeoutMs: 200 })).rejects.toThrow();
      expect(sim.ledger.appliedCount(hung.transaction_id)).toBe(1);

      sim.faults.applyThenDrop('debit', 1, { mode: 'reset' });
      const reset = debitOf(s, '6');
      await expect(call('debit', reset)).rejects.toThrow();
      expect(sim.ledger.appliedCount(reset.transaction_id)).toBe(1);
      expect(sim.ledger.balanceOf(s.player_id)).toBe('990.00');
      // The retry of a lost answer gets the original success without a second effect.
      expect(codeOf(await call('debit', reset))).toBe('1');
      expect(sim.ledger.balanceOf(s.player_id)).toBe('990.00');
    });

    it('reset and nonJson apply nothing', async () => {
      const s = await session();
      sim.faults.reset('debit', 1);
      const reset = debitOf(s, '4');
      await expect(call('debit', reset)).rejects.toThrow();
      sim.faults.nonJson('debit', 1);
      const junk = await call('debit', debitOf(s, '4'));
      expect(junk.status).toBe(200);
      expect(() => JSON.parse(junk.text)).toThrow();
      expect(sim.ledger.balanceOf(s.player_id)).toBe('1000.00');
      expect(sim.calls().slice(-2).map((c) => [c.fault, c.applied])).toEqual([
        ['reset', false],
        ['nonJson', false],
      ]);
    });

    it('latency delays answers', async () => {
      const s = await session();
      sim.faults.latency('balance', 150);
      const started = performance.now();
      await call('balance', s);
      expect(performance.now() - started).toBeGreaterThanOrEqual(140);
    });

    it('delayNext holds one transaction\'s call, then applies it after the caller gave up', async () => {
      const s = await session();
      const late = debitOf(s, '3');
      sim.faults.delayNext('debit', 1, 400, { transactionId: late.transaction_id });
      expect(codeOf(await call('debit', debitOf(s, '1')))).toBe('1');
      await expect(call('debit', late, { timeoutMs: 100 })).rejects.toThrow();
      expect(sim.ledger.appliedCount(late.transaction_id)).toBe(0);
      const deadline = Date.now() + 5000;
      while (sim.ledger.appliedCount(late.transaction_id) === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      expect(sim.ledger.appliedCount(late.transaction_id)).toBe(1);
      expect(sim.calls().filter((c) => c.transactionId === late.transaction_id).map((c) => [c.fault, c.faultSource, c.code, c.applied])).toEqual([
        ['latency', 'armed', 1, true],
      ]);
      expect(sim.faults.snapshot().armed).toEqual([]);
    });

    it('health check: 204 for the right Host, 400 for another, 503 when unhealthy', async () => {
      const health = (host?: string): Promise<Answer> =>
        request(`${sim.url}/api/health-check`, { method: 'POST', headers: host ? { host } : {} }).then(read);
      expect((await health()).status).toBe(204);
      expect((await health(`localhost:${sim.port}`)).status).toBe(204);
      expect((await health('wallet.example:443')).status).toBe(400);
      sim.faults.unhealthy(true);
      expect((await health()).status).toBe(503);
      sim.faults.clear();
      expect((await health()).text).toBe('');
    });

    it('chaos is reproducible with the same seed', async () => {
      const run = async (seed: number): Promise<string[]> => {
        const chaotic = await startSimulator({ basicUser: USER, basicPassword: PASSWORD, signingSecret: SECRET, chaos: { seed, rate: 0.5 } });
        try {
          const s = newSession();
          await callOn(chaotic.url, 'authenticate', s);
          for (let i = 0; i < 24; i += 1) {
            await callOn(chaotic.url, 'debit', debitOf(s, '1', { transaction_id: `tx-${i}`, round_id: `r-${i}` }), { timeoutMs: 500 }).catch(
              () => undefined,
            );
          }
          return chaotic.calls().map((c) => `${c.operation}:${c.fault ?? '-'}:${c.code ?? '-'}`);
        } finally {
          await chaotic.close();
        }
      };
      const first = await run(7);
      expect(await run(7)).toEqual(first);
      expect(new Set(first.map((f) => f.split(':')[1])).size).toBeGreaterThan(2);
      expect(await run(8)).not.toEqual(first);
    });
  });

  describe('admin API', () => {
    // Admin answers carry ids as strings, so plain JSON reads them.
    const admin = async (method: 'GET' | 'POST' | 'DELETE', path: string, body?: unknown): Promise<Answer> => {
      const res = await request(`${sim.url}/__sim/${path}`, { method, body: body === undefined ? undefined : JSON.stringify(body) });
      const raw = await res.body.text();
      return { status: res.statusCode, text: raw, json: JSON.parse(raw) as Record<string, unknown> };
    };

    it('arms faults and shows calls and the ledger', async () => {
      const s = await session();
      expect((await admin('POST', 'faults', { type: 'failNext', op: 'debit', count: 1, code: Code.ConcurrentRequest })).status).toBe(200);
      expect((await admin('GET', 'faults')).json.armed).toHaveLength(1);
      expect(codeOf(await call('debit', debitOf(s, '1')))).toBe(String(Code.ConcurrentRequest));
      const debit = debitOf(s, '2.5');
      await call('debit', debit);

      const player = await admin('GET', `ledger/players/${s.player_id}`);
      expect(player.json).toMatchObject({ playerId: s.player_id, balance: '997.50' });
      expect((player.json.transactions as unknown[]).length).toBe(1);
      expect((await admin('GET', `ledger/transactions/${debit.transaction_id}`)).json).toMatchObject({ timesApplied: 1 });
      expect((await admin('GET', 'ledger')).json.players).toContainEqual({ playerId: s.player_id, currency: 'EUR', balance: '997.50' });
      const calls = (await admin('GET', 'calls?op=debit')).json.calls as { transactionId: string; fault?: string }[];
      expect(calls.at(-1)).toMatchObject({ transactionId: debit.transaction_id });
      expect(calls.at(-2)).toMatchObject({ fault: 'fail' });
      expect((await admin('GET', 'ledger/players/1')).status).toBe(404);
    });

    it('sets chaos, latency and health, clears, and names bad fields', async () => {
      expect((await admin('POST', 'chaos', { seed: 3, rate: 0.25 })).status).toBe(200);
      expect((await admin('GET', 'faults')).json.chaos).toMatchObject({ seed: 3, rate: 0.25 });
      expect((await admin('POST', 'faults', { type: 'unhealthy', value: true })).status).toBe(200);
      expect((await admin('POST', 'faults', { type: 'latency', op: '*', ms: 10 })).status).toBe(200);
      expect((await admin('POST', 'faults', { type: 'delayNext', op: 'terminate', count: 2, ms: 5000 })).status).toBe(200);
      expect((await admin('GET', 'faults')).json.armed).toEqual([{ op: 'terminate', action: { kind: 'latency', ms: 5000 }, remaining: 2 }]);
      expect((await admin('POST', 'clear')).status).toBe(200);
      expect((await admin('GET', 'faults')).json).toMatchObject({ chaos: null, unhealthy: false, armed: [], latency: {} });

      const badOp = await admin('POST', 'faults', { type: 'reset', op: 'deposit', count: 1 });
      expect(badOp.status).toBe(400);
      expect(badOp.json.error).toMatch(/^op:/);
      expect((await admin('POST', 'faults', { type: 'failNext', op: 'debit', code: 9999 })).json.error).toMatch(/9999/);
      expect((await admin('POST', 'chaos', { seed: 1, rate: 2 })).json.error).toMatch(/^rate:/);
      expect((await admin('DELETE', 'calls')).status).toBe(200);
      expect(sim.calls()).toEqual([]);
    });
  });
});

describe('wallet simulator over HTTP/2 with TLS', () => {
  let sim: RunningSimulator;
  let h2: Agent;
  let h1: Agent;

  beforeAll(async () => {
    sim = await startSimulator({ basicUser: USER, basicPassword: PASSWORD, signingSecret: SECRET, tls: selfSignedCert() });
    h2 = new Agent({ allowH2: true, connect: { rejectUnauthorized: false } });
    h1 = new Agent({ connect: { rejectUnauthorized: false } });
  });
  afterAll(async () => {
    await Promise.all([h2.close(), h1.close()]);
    await sim.close();
  });

  it('serves the same wallet over HTTP/2 and falls back to HTTP/1.1', async () => {
    expect(sim.url).toMatch(/^https:/);
    const s = newSession({ player_id: U64_MAX });
    const auth = await callOn(sim.url, 'authenticate', s, { dispatcher: h2 });
    expect(auth.text).toContain(`"player_id":${U64_MAX}`);
    const debit = debitOf(s, '1.25');
    expect(text((await callOn(sim.url, 'debit', debit, { dispatcher: h1 })).json.balance)).toBe('998.75');
    const health = await request(`${sim.url}/api/health-check`, { method: 'POST', dispatcher: h2 });
    expect(health.statusCode).toBe(204);
    await health.body.dump();
    expect(sim.calls().map((c) => c.httpVersion)).toEqual(['2.0', '1.1', '2.0']);
  });

  it('resets and hangs HTTP/2 streams', async () => {
    const s = newSession();
    await callOn(sim.url, 'authenticate', s, { dispatcher: h2 });
    sim.faults.reset('debit', 1);
    await expect(callOn(sim.url, 'debit', debitOf(s, '1'), { dispatcher: h2 })).rejects.toThrow();
    sim.faults.applyThenDrop('debit', 1, { mode: 'hang' });
    const hung = debitOf(s, '2');
    await expect(callOn(sim.url, 'debit', hung, { dispatcher: h2, timeoutMs: 200 })).rejects.toThrow();
    expect(sim.ledger.appliedCount(hung.transaction_id)).toBe(1);
    // The connection survives a reset stream: the next call on it is answered.
    expect(text((await callOn(sim.url, 'balance', s, { dispatcher: h2 })).json.balance)).toBe('998.00');
  });
});
