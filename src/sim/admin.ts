import { z } from 'zod';
import { JsonSyntaxError, LosslessNumber, parseJson } from '../lib/json';
import { smallInt } from '../lib/schemas';
import { OPERATIONS } from '../wallet/protocol';
import type { CallLog } from './calls';
import type { Faults } from './faults';
import type { SimWallet } from './wallet';

/**
 * The simulator's admin API under /__sim/ (JSON, no wallet auth: the simulator is a test tool).
 * Lets child-process tests and the demo page arm faults and read the books over HTTP.
 * Routes are listed in docs/simulator.md.
 */
export const ADMIN_PREFIX = '/__sim/';

export interface AdminContext {
  readonly faults: Faults;
  readonly wallet: SimWallet;
  readonly calls: CallLog;
}

export interface AdminAnswer {
  readonly status: number;
  readonly body: unknown;
}

const op = z.enum(OPERATIONS);
const count = smallInt.pipe(z.number().min(1)).optional();
const transactionId = z.string().min(1).optional();
const ratio = z
  .unknown()
  .transform((v) => (v instanceof LosslessNumber ? Number(v.value) : v))
  .pipe(z.number().min(0).max(1));

const faultBody = z.discriminatedUnion('type', [
  z.object({ type: z.literal('failNext'), op, count, code: smallInt, transactionId }),
  z.object({ type: z.literal('applyThenDrop'), op, count, mode: z.enum(['hang', 'reset']).optional(), transactionId }),
  z.object({ type: z.literal('nonJson'), op, count }),
  z.object({ type: z.literal('reset'), op, count }),
  z.object({ type: z.literal('delayNext'), op, count, ms: smallInt, transactionId }),
  z.object({ type: z.literal('latency'), op: z.union([op, z.literal('*')]), ms: smallInt }),
  z.object({ type: z.literal('unhealthy'), value: z.boolean() }),
  z.object({ type: z.literal('down'), mode: z.enum(['code', 'hang']).nullable() }),
]);

const chaosBody = z.union([
  z.null(),
  z.object({ seed: smallInt, rate: ratio, codes: z.array(smallInt).min(1).optional() }),
]);

function describe(error: z.ZodError): string {
  return error.issues
    .map((issue) => {
      const field = issue.path.length > 0 ? issue.path.join('.') : 'body';
      return `${field}: ${issue.message}`;
    })
    .join('; ');
}

function bad(message: string): AdminAnswer {
  return { status: 400, body: { error: message } };
}

function parseBody<S extends z.ZodType>(schema: S, raw: string): { ok: true; value: z.output<S> } | { ok: false; answer: AdminAnswer } {
  let json: unknown;
  try {
    json = parseJson(raw === '' ? 'null' : raw);
  } catch (err) {
    if (err instanceof JsonSyntaxError) return { ok: false, answer: bad(`body: not JSON (${err.message})`) };
    throw err;
  }
  const result = schema.safeParse(json);
  return result.success ? { ok: true, value: result.data } : { ok: false, answer: bad(describe(result.error)) };
}

const OK: AdminAnswer = { status: 200, body: { ok: true } };

export function handleAdmin(ctx: AdminContext, method: string, url: URL, raw: string): AdminAnswer {
  const path = url.pathname.slice(ADMIN_PREFIX.length);
  const route = `${method} ${path}`;
  try {
    switch (route) {
      case 'GET calls': {
        const only = url.searchParams.get('op');
        const calls = ctx.calls.list().filter((c) => only === null || c.operation === only);
        return { status: 200, body: { calls } };
      }
      case 'DELETE calls':
        ctx.calls.clear();
        return OK;
      case 'GET faults':
        return { status: 200, body: ctx.faults.snapshot() };
      case 'POST faults':
        return armFault(ctx, raw);
      case 'POST chaos': {
        const parsed = parseBody(chaosBody, raw);
        if (!parsed.ok) return parsed.answer;
        ctx.faults.chaos(parsed.value);
        return OK;
      }
      case 'POST clear':
        ctx.faults.clear();
        return OK;
      case 'GET ledger':
        return { status: 200, body: { players: ctx.wallet.players(), transactions: ctx.wallet.transactions() } };
    }
    return ledgerItem(ctx, method, path);
  } catch (err) {
    // Controller range checks (bad count, unknown code, rate) surface as 400s naming the problem.
    if (err instanceof RangeError) return bad(err.message);
    throw err;
  }
}

function armFault(ctx: AdminContext, raw: string): AdminAnswer {
  const parsed = parseBody(faultBody, raw);
  if (!parsed.ok) return parsed.answer;
  const f = parsed.value;
  switch (f.type) {
    case 'failNext':
      ctx.faults.failNext(f.op, f.count ?? 1, f.code, { transactionId: f.transactionId });
      break;
    case 'applyThenDrop':
      ctx.faults.applyThenDrop(f.op, f.count ?? 1, { mode: f.mode ?? 'reset', transactionId: f.transactionId });
      break;
    case 'nonJson':
      ctx.faults.nonJson(f.op, f.count ?? 1);
      break;
    case 'reset':
      ctx.faults.reset(f.op, f.count ?? 1);
      break;
    case 'delayNext':
      ctx.faults.delayNext(f.op, f.count ?? 1, f.ms, { transactionId: f.transactionId });
      break;
    case 'latency':
      ctx.faults.latency(f.op, f.ms);
      break;
    case 'down':
      ctx.faults.down(f.mode);
      break;
    case 'unhealthy':
      ctx.faults.unhealthy(f.value);
      break;
  }
  return OK;
}

function ledgerItem(ctx: AdminContext, method: string, path: string): AdminAnswer {
  const player = /^ledger\/players\/([^/]+)$/.exec(path);
  if (method === 'GET' && player) {
    const playerId = decodeURIComponent(player[1] as string);
    const view = ctx.wallet.players().find((p) => p.playerId === playerId);
    if (!view) return { status: 404, body: { error: `no player ${playerId}` } };
    return { status: 200, body: { ...view, transactions: ctx.wallet.transactions().filter((t) => t.playerId === playerId) } };
  }
  const tx = /^ledger\/transactions\/([^/]+)$/.exec(path);
  if (method === 'GET' && tx) {
    const view = ctx.wallet.transaction(decodeURIComponent(tx[1] as string));
    return view ? { status: 200, body: view } : { status: 404, body: { error: 'no such transaction' } };
  }
  return { status: 404, body: { error: `no admin route ${method} /__sim/${path}` } };
}
