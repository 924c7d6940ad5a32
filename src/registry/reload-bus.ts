import { randomUUID } from 'node:crypto';
import { Cluster } from 'ioredis';
import { z } from 'zod';
import type { RedisClient } from '../store/redis';
import { codedError } from '../lib/error-codes';
import type { ProcessId, ReloadResult, Reloader } from './reload';

/**
 * How POST /admin/api/registry/reload reaches every gateway and worker process of the deployment
 * (contract 11): Redis pub/sub under QUEUE_PREFIX. Each process subscribes to the reload channel and
 * keeps its presence in a ZSET (renewed every PRESENCE_RENEW_MS, counted for PRESENCE_MS). A request
 * is published with a reply channel; each process reloads itself and publishes its result there.
 * The asking process waits until every process present has answered, or ANSWER_WAIT_MS: a present
 * process that did not answer by then is listed as `NO_ANSWER` (it may be busy, stuck or gone
 * without leaving; a process that died drops out of the presence within PRESENCE_MS).
 */
export const ANSWER_WAIT_MS = 5_000;
export const PRESENCE_RENEW_MS = 2_000;
export const PRESENCE_MS = 3 * PRESENCE_RENEW_MS;

export interface ProcessAnswer {
  readonly process: ProcessId & { readonly id: string };
  readonly result: ReloadResult | { readonly ok: false; readonly error: { readonly code: 'NO_ANSWER'; readonly message: string } };
}

export interface ReloadBus {
  /** Asks every process present to reload, and gives each one's answer. */
  requestAll(): Promise<ProcessAnswer[]>;
  /** Leaves: takes no new request, waits for the answer under way, drops the presence, closes the subscriber connection. */
  close(): Promise<void>;
}

/** Where the bus tells what went wrong (the process's logger). */
interface BusLog {
  debug(fields: object, message: string): void;
  warn(fields: object, message: string): void;
  error(fields: object, message: string): void;
}

export interface ReloadBusDeps {
  /** The process's store connection: it writes the presence and publishes; a duplicate subscribes. */
  readonly redis: RedisClient;
  readonly prefix: string;
  readonly self: ProcessId;
  readonly reload: () => Promise<ReloadResult>;
  readonly logger: BusLog;
  readonly answerWaitMs?: number;
}

const requestSchema = z.object({ request: z.string().min(1).max(64), reply: z.string().min(1).max(300) });
const answerSchema = z.object({ process: z.object({ id: z.string(), kind: z.enum(['gateway', 'worker']), pid: z.number(), host: z.string() }), result: z.looseObject({ ok: z.boolean() }) });

export async function startReloadBus(deps: ReloadBusDeps): Promise<ReloadBus> {
  const { redis, logger } = deps;
  const channel = `${deps.prefix}:registry-reload`;
  const presenceKey = `${deps.prefix}:registry-processes`;
  const self = { ...deps.self, id: randomUUID() };
  const member = JSON.stringify(self);
  const waitMs = deps.answerWaitMs ?? ANSWER_WAIT_MS;
  const replies = new Map<string, (answer: ProcessAnswer) => void>();
  // Its own connection, without auto-pipelining: a subscriber's commands go out one by one, in order.
  const subscriber = redis instanceof Cluster ? redis.duplicate() : redis.duplicate({ enableAutoPipelining: false });
  // A subscriber connection is one of pub/sub alone; its errors are the connection's, told once each.
  subscriber.on('error', (err: unknown) => logger.debug({ err }, 'reload subscriber error'));

  // Renews this process and drops those that stopped renewing (the key lives as long as a renewal).
  const renew = () => {
    const at = Date.now();
    return redis.multi().zremrangebyscore(presenceKey, '-inf', at).zadd(presenceKey, at + PRESENCE_MS, member).pexpire(presenceKey, PRESENCE_MS).exec();
  };
  await renew();
  const timer = setInterval(() => {
    renew().catch((err: unknown) => logger.warn({ err }, 'reload presence not renewed'));
  }, PRESENCE_RENEW_MS);
  timer.unref();

  const answering = new Set<Promise<void>>();
  let closing = false;
  subscriber.on('message', (from: string, text: string) => {
    if (from === channel) {
      const parsed = requestSchema.safeParse(safeJson(text));
      if (!parsed.success || closing) return;
      const answered = answer(parsed.data.reply);
      answering.add(answered);
      void answered.finally(() => answering.delete(answered));
      return;
    }
    const deliver = replies.get(from);
    const parsed = answerSchema.safeParse(safeJson(text));
    if (deliver !== undefined && parsed.success) deliver(parsed.data as unknown as ProcessAnswer);
  });
  await subscriber.subscribe(channel);

  async function answer(reply: string): Promise<void> {
    let result: ReloadResult;
    try {
      result = await deps.reload();
    } catch (err) {
      logger.error({ err }, 'registry reload failed');
      result = { ok: false, status: 500, error: { code: 'INTERNAL_ERROR', message: 'the reload failed in this process; see its log' } };
    }
    if (!result.ok) logger.warn({ error: result.error }, 'registry reload refused');
    await redis.publish(reply, JSON.stringify({ process: self, result })).catch((err: unknown) => logger.warn({ err }, 'reload answer not sent'));
  }

  return {
    async requestAll() {
      const request = randomUUID();
      const reply = `${channel}:${request}`;
      const answers = new Map<string, ProcessAnswer>();
      let done: () => void = () => undefined;
      const finished = new Promise<void>((resolve) => (done = resolve));
      // Subscribed before the request goes out: no answer comes before anyone listens.
      await subscriber.subscribe(reply);
      const present = (await redis.zrangebyscore(presenceKey, Date.now(), '+inf')).map((m) => safeJson(m)).filter((p): p is ProcessAnswer['process'] => answerSchema.shape.process.safeParse(p).success);
      replies.set(reply, (a) => {
        answers.set(a.process.id, a);
        if (present.every((p) => answers.has(p.id))) done();
      });
      const timeout = setTimeout(done, waitMs);
      try {
        await redis.publish(channel, JSON.stringify({ request, reply }));
        await finished;
      } finally {
        clearTimeout(timeout);
        replies.delete(reply);
        await subscriber.unsubscribe(reply).catch(() => undefined);
      }
      const silent = present
        .filter((p) => !answers.has(p.id))
        .map((process): ProcessAnswer => ({ process, result: { ok: false, error: { code: 'NO_ANSWER', message: `no answer within ${waitMs} ms` } } }));
      return [...answers.values(), ...silent];
    },
    async close() {
      closing = true;
      clearInterval(timer);
      // A reload under way finishes (and answers) before the process closes what it opened.
      await Promise.all([...answering]);
      await redis.zrem(presenceKey, member).catch(() => undefined);
      await subscriber.quit().catch(() => subscriber.disconnect());
    },
  };
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

/** What POST /admin/api/registry/reload answers: its HTTP status and body. */
export interface DeploymentReload {
  readonly status: number;
  readonly body: Record<string, unknown>;
}

/**
 * The admin route's reload: first this process reads, validates and checks the file (a bad file or
 * a wallet in use is refused here, 4xx, and no process is asked), then every process is asked.
 * 200 when each one present applied it; else 503 RELOAD_INCOMPLETE, with each one's result (a
 * reload is repeatable: a process that has the file already changes nothing).
 */
export async function reloadDeployment(reloader: Reloader, bus: ReloadBus): Promise<DeploymentReload> {
  const checked = await reloader.reload({ checkOnly: true });
  if (!checked.ok) return { status: checked.status, body: { state: 'failed', error: { ...checked.error, wallet_code: null }, ...(checked.in_use === undefined ? {} : { in_use: checked.in_use }) } };
  const answers = await bus.requestAll();
  const processes = answers.map((a) => ({ ...a.process, ...a.result }));
  if (answers.every((a) => a.result.ok)) return { status: 200, body: { state: 'reloaded', ...summaryOf(checked), processes } };
  const error = codedError('RELOAD_INCOMPLETE');
  return { status: error.httpStatus, body: { state: 'failed', error: { code: error.code, message: error.message, wallet_code: null }, processes } };
}

function summaryOf(result: Extract<ReloadResult, { ok: true }>) {
  const { ok: _ok, ...summary } = result;
  return summary;
}
