import { Agent, request } from 'undici';
import { LosslessNumber, parseJson } from '../lib/json';
import type { RecordView } from './checker';
import { needsResend, type Reply } from './history';

/**
 * The scripted engine's HTTP side: the contract's engine API (section 4) over real HTTP to one of
 * the gateways. A send that got no usable answer (connection refused or reset by a killed gateway,
 * a 5xx of the gateway's own, IN_PROGRESS) goes out again with the same body, to the next gateway,
 * until a final answer or the deadline — as a real engine does.
 */
export interface EngineClientOptions {
  /** Base URLs of the gateways; a resend goes to the next one. */
  readonly gateways: readonly string[];
  readonly apiKey: string;
  readonly adminUser: string;
  readonly adminPassword: string;
  /** No answer within this long counts as no answer. */
  readonly answerTimeoutMs: number;
  /** Resends stop after this long; the transaction is then unanswered. */
  readonly resendDeadlineMs: number;
  /**
   * The registry wallet this engine plays on (contract 11): launches go to `/launch/{wallet}` and
   * every transaction lookup and operator action names it (`?wallet=`). Unset: `GET /launch` and
   * no `?wallet=`, the single-wallet deployment.
   */
  readonly wallet?: string;
}

export interface Answered {
  readonly reply: Reply;
  /** Balance of a 200/202 answer (decimal text). */
  readonly balance: string | undefined;
  /** Sends it took (1 = the first was final). */
  readonly sends: number;
}

/**
 * `unanswered`: sends that got no answer or a 5xx of the gateway's own (not a wallet refusal, which
 * opens no session). Each may have opened a session the engine never learned of (a gateway killed
 * after creating it): only its expiry ends it.
 */
export type LaunchOutcome =
  | { readonly ok: true; readonly sessionId: string; readonly balance: string; readonly currency: string; readonly unanswered: number }
  | { readonly ok: false; readonly detail: string; readonly unanswered: number };

interface Raw {
  readonly status: number;
  readonly body: Record<string, unknown> | undefined;
}

function text(value: unknown): string | undefined {
  if (value instanceof LosslessNumber) return value.value;
  return typeof value === 'string' ? value : undefined;
}

function replyOf(raw: Raw): Reply {
  const error = raw.body?.error as Record<string, unknown> | undefined;
  const walletCode = text(error?.wallet_code);
  return {
    kind: 'answer',
    status: raw.status,
    state: text(raw.body?.state),
    code: text(error?.code),
    // A wallet result code is a small integer (src/wallet/codes.ts), not an id or an amount.
    walletCode: walletCode === undefined ? null : Number(walletCode),
  };
}

function reasonOf(err: unknown): string {
  const e = err as { code?: string; message?: string };
  return e.code ?? e.message ?? String(err);
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

export class EngineClient {
  private readonly agent: Agent;
  private readonly auth: string;
  private readonly adminAuth: string;
  private readonly launchPath: string;
  /** `?wallet=…` of the transaction routes, or nothing. */
  private readonly walletQuery: string;
  /** Sends beyond the first, across every transaction. */
  resends = 0;

  constructor(private readonly options: EngineClientOptions) {
    this.agent = new Agent({ connections: 128, headersTimeout: options.answerTimeoutMs, bodyTimeout: options.answerTimeoutMs, keepAliveTimeout: 2000 });
    this.auth = `Bearer ${options.apiKey}`;
    this.adminAuth = `Basic ${Buffer.from(`${options.adminUser}:${options.adminPassword}`).toString('base64')}`;
    this.launchPath = options.wallet === undefined ? '/launch' : `/launch/${encodeURIComponent(options.wallet)}`;
    this.walletQuery = options.wallet === undefined ? '' : `?wallet=${encodeURIComponent(options.wallet)}`;
  }

  private async once(method: 'GET' | 'POST', url: string, body: string | undefined, authorization: string): Promise<Raw> {
    const res = await request(url, {
      method,
      dispatcher: this.agent,
      headers: { authorization, accept: 'application/json', ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body,
    });
    const raw = await res.body.text();
    let parsed: Record<string, unknown> | undefined;
    try {
      const json = parseJson(raw);
      parsed = json !== null && typeof json === 'object' ? (json as Record<string, unknown>) : undefined;
    } catch {
      parsed = undefined;
    }
    return { status: res.statusCode, body: parsed };
  }

  /**
   * POSTs `body` to `path` until a final answer, appending every reply to `replies`.
   * `lane` picks the first gateway, so players spread over them.
   */
  async send(path: string, body: string, replies: Reply[], lane: number): Promise<Answered> {
    const deadline = Date.now() + this.options.resendDeadlineMs;
    const gateways = this.options.gateways;
    for (let attempt = 0; ; attempt += 1) {
      if (attempt > 0) this.resends += 1;
      const url = `${gateways[(lane + attempt) % gateways.length] as string}${path}`;
      let reply: Reply;
      let balance: string | undefined;
      try {
        const raw = await this.once('POST', url, body, this.auth);
        reply = replyOf(raw);
        balance = text(raw.body?.balance);
      } catch (err) {
        reply = { kind: 'no-answer', reason: reasonOf(err) };
      }
      replies.push(reply);
      if (!needsResend(reply) || Date.now() > deadline) return { reply, balance, sends: attempt + 1 };
      await sleep(Math.min(1000, 100 * (attempt + 1)));
    }
  }

  /** GET /launch with Accept: application/json, again on no answer or a 5xx, until the deadline. */
  async launch(query: Record<string, string>, lane: number): Promise<LaunchOutcome> {
    const deadline = Date.now() + this.options.resendDeadlineMs;
    const gateways = this.options.gateways;
    const qs = new URLSearchParams(query).toString();
    let unanswered = 0;
    for (let attempt = 0; ; attempt += 1) {
      const url = `${gateways[(lane + attempt) % gateways.length] as string}${this.launchPath}?${qs}`;
      let detail: string;
      try {
        const raw = await this.once('GET', url, undefined, '');
        const sessionId = text(raw.body?.session_id);
        const balance = text(raw.body?.balance);
        const currency = text(raw.body?.currency);
        if (raw.status === 200 && sessionId !== undefined && balance !== undefined && currency !== undefined) return { ok: true, sessionId, balance, currency, unanswered };
        const error = raw.body?.error as Record<string, unknown> | undefined;
        detail = `${raw.status} ${JSON.stringify(error ?? raw.body ?? null)}`;
        if (raw.status < 500) return { ok: false, detail, unanswered };
        if (needsResend({ kind: 'answer', status: raw.status, state: undefined, code: text(error?.code), walletCode: null })) unanswered += 1;
      } catch (err) {
        detail = reasonOf(err);
        // A refused connection never reached a gateway.
        if (detail !== 'ECONNREFUSED') unanswered += 1;
      }
      if (Date.now() > deadline) return { ok: false, detail, unanswered };
      await sleep(Math.min(1000, 100 * (attempt + 1)));
    }
  }

  /**
   * The gateway's record of a transaction: null for 404, undefined when no gateway answered.
   * A dead record's reason comes from the operators' view.
   */
  async record(transactionId: string, lane: number): Promise<RecordView | null | undefined> {
    const gateways = this.options.gateways;
    for (let attempt = 0; attempt < gateways.length; attempt += 1) {
      const base = gateways[(lane + attempt) % gateways.length] as string;
      try {
        const raw = await this.once('GET', `${base}/engine/v1/transactions/${encodeURIComponent(transactionId)}${this.walletQuery}`, undefined, this.auth);
        if (raw.status === 404) return null;
        if (raw.status !== 200 || raw.body === undefined) continue;
        const comp = raw.body.compensation as Record<string, unknown> | null | undefined;
        const state = text(raw.body.state) ?? 'unknown';
        const view: RecordView = {
          state,
          attempts: text(raw.body.attempts) === undefined ? undefined : Number(text(raw.body.attempts)),
          compensation: comp ? { transaction_id: text(comp.transaction_id) ?? '', state: text(comp.state) ?? 'unknown' } : null,
        };
        return state === 'dead' || comp?.state === 'dead' ? { ...view, reason: await this.deadReason(base, transactionId, comp) } : view;
      } catch {
        continue;
      }
    }
    return undefined;
  }

  /**
   * GET /engine/v1/transactions/{id} without `?wallet=`, so every wallet of the engine is searched:
   * the status and error code, e.g. `409 AMBIGUOUS_TRANSACTION` for an id held in several wallets.
   */
  async lookupEverywhere(transactionId: string): Promise<string> {
    const raw = await this.once('GET', `${this.options.gateways[0] as string}/engine/v1/transactions/${encodeURIComponent(transactionId)}`, undefined, this.auth);
    const code = text((raw.body?.error as Record<string, unknown> | undefined)?.code);
    return `${raw.status}${code === undefined ? '' : ` ${code}`}`;
  }

  private async deadReason(base: string, transactionId: string, comp: Record<string, unknown> | null | undefined): Promise<string | null> {
    const ids = [transactionId, ...(comp ? [text(comp.transaction_id) ?? ''] : [])];
    const reasons: string[] = [];
    for (const id of ids) {
      try {
        const raw = await this.once('GET', `${base}/admin/transactions/${encodeURIComponent(id)}${this.walletQuery}`, undefined, this.adminAuth);
        const body = raw.body;
        const error = body?.error as Record<string, unknown> | null | undefined;
        const said = text(body?.note) ?? text(error?.message);
        if (said !== undefined && text(body?.state) === 'dead') reasons.push(`${id}: ${said}`);
      } catch {
        // The reason is a courtesy; the state is what the checker needs.
      }
    }
    return reasons.length > 0 ? reasons.join('; ') : null;
  }

  /**
   * An operator's resolution of a dead record after checking the wallet
   * (POST /admin/api/transactions/{id}/resolve): the HTTP status and the state the record moved to.
   */
  async resolve(transactionId: string, outcome: 'applied' | 'not_applied' | 'bet_not_applied', note: string): Promise<{ status: number; stateAfter: string | undefined }> {
    const url = `${this.options.gateways[0] as string}/admin/api/transactions/${encodeURIComponent(transactionId)}/resolve${this.walletQuery}`;
    const raw = await this.once('POST', url, JSON.stringify({ note, outcome }), this.adminAuth);
    return { status: raw.status, stateAfter: text(raw.body?.state_after) };
  }

  /** The operator's bulk redrive of every dead record (POST /admin/transactions/redrive): the ids redriven. */
  async redriveDead(): Promise<string[]> {
    const raw = await this.once('POST', `${this.options.gateways[0] as string}/admin/transactions/redrive${this.walletQuery}`, '{}', this.adminAuth);
    const redriven = raw.body?.redriven;
    if (raw.status !== 202 || !Array.isArray(redriven)) throw new Error(`bulk redrive answered ${raw.status} ${JSON.stringify(raw.body ?? null)}`);
    return redriven.map(String);
  }

  close(): Promise<void> {
    return this.agent.close();
  }
}
