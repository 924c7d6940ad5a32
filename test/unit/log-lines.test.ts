import pino from 'pino';
import { performance } from 'node:perf_hooks';
import { requestLog } from '../../src/http/request-log';
import { createLogger, lineWriter, unredactedSibling, type Logger } from '../../src/observability/logger';
import { walletCallObserver } from '../../src/observability/wallet-calls';
import type { WalletCallEvent } from '../../src/wallet/protocol';
import { logSink } from '../support/log-sink';

/**
 * The request line and the wallet-call line are written by hand (lineWriter): each must be byte for
 * byte the line pino writes for the same fields, the time aside (two writes, two clocks).
 */
const sameTime = (line: string): string => line.replace(/^\{"level":(\d+),"time":\d+,/, '{"level":$1,"time":0,');

function loggers(level = 'info'): { logger: Logger; lines: string[] } {
  const sink = logSink();
  return { logger: createLogger({ level, name: 'gateway', destination: sink.destination }).child({ component: 'wallet' }), lines: sink.logs };
}

/** Odd strings for every string field: quotes and backslashes (first, inner, last), control characters, long, non-ASCII, a lone surrogate. */
const STRINGS = ['plain-id', '"quoted"', '\\lead', 'in"ner\\mix"', 'tab\there', 'nl\n', 'x'.repeat(100), 'y'.repeat(101), 'ünï—€😀', 'lone\ud800', '\u2028', ''];

describe('the request line', () => {
  const cases = [
    { method: 'POST', path: '/engine/v1/sessions/s-1/bet', route: '/engine/v1/sessions/:sessionId/bet', status: 200, answered: true, wallet: 'casino-a' },
    { method: undefined, path: '/x', route: 'unmatched', status: 401, answered: true, wallet: undefined },
    { method: 'GET', path: '/engine/v1/transactions/1', route: 'unmatched', status: 503, answered: true, wallet: 'default' },
    { method: 'POST', path: '/y', route: 'unmatched', status: 200, answered: false, wallet: undefined },
    ...STRINGS.map((text) => ({ method: text, path: text, route: 'unmatched', status: 202, answered: true, wallet: text })),
  ];

  it.each(cases)('is what pino writes for its fields: %j', (fields) => {
    const { logger, lines } = loggers();
    const requestId = fields.path === '/x' ? '"id"' : 'req-1';
    requestLog(logger, undefined)({ requestId, method: fields.method, path: fields.path, route: fields.route, status: fields.status, startedAt: performance.now() - 1.234, answered: fields.answered, wallet: fields.wallet });
    expect(lines).toHaveLength(1);
    const written = JSON.parse(lines[0]!) as { responseTime: number };
    unredactedSibling(logger)[!fields.answered || fields.status >= 500 ? 'error' : 'info'](
      { request_id: requestId, wallet: fields.wallet, req: { method: fields.method, path: fields.path }, res: { status: fields.status }, responseTime: written.responseTime },
      fields.answered ? 'request completed' : 'request aborted',
    );
    expect(lines).toHaveLength(2);
    expect(sameTime(lines[0]!)).toBe(sameTime(lines[1]!));
  });

  it('is not written below the logger level, and its counter still counts', async () => {
    const { logger, lines } = loggers('warn');
    const { createMetrics } = await import('../../src/observability/metrics');
    const metrics = createMetrics({ defaultMetrics: false });
    const log = requestLog(logger, metrics);
    log({ requestId: 'r', method: 'POST', path: '/p', route: 'unmatched', status: 200, startedAt: performance.now(), answered: true });
    log({ requestId: 'r', method: 'POST', path: '/p', route: 'unmatched', status: 500, startedAt: performance.now(), answered: true });
    expect(lines.map((l) => (JSON.parse(l) as { level: number }).level)).toEqual([50]);
    expect((await metrics.engineRequests.get()).values.map((v) => v.value)).toEqual([1, 1]);
  });
});

describe('the wallet-call line', () => {
  const base: WalletCallEvent = {
    operation: 'debit',
    outcome: 'ok',
    code: 0,
    httpStatus: 200,
    walletRequestId: 'w-1',
    latencyMs: 3.456,
    transactionId: '18446744073709551615',
    requestId: 'req-1',
    detail: undefined,
  };
  const events: WalletCallEvent[] = [
    base,
    { ...base, outcome: 'rejected', code: 102, httpStatus: 402, detail: 'failure code 102 on HTTP 200' },
    { ...base, operation: 'health-check', outcome: 'unknown', code: null, httpStatus: null, walletRequestId: undefined, transactionId: undefined, requestId: undefined, detail: 'no answer within 5000 ms' },
    { ...base, latencyMs: Number.NaN },
    { ...base, latencyMs: 0.04 },
    ...STRINGS.map((text) => ({ ...base, walletRequestId: text, transactionId: text, requestId: text, detail: text })),
  ];

  it.each(events)('is what pino writes for its fields: %j', (event) => {
    const { logger, lines } = loggers();
    walletCallObserver(logger, undefined)(event);
    unredactedSibling(logger)[event.outcome === 'unknown' ? 'warn' : 'info'](
      {
        request_id: event.requestId,
        wallet_request_id: event.walletRequestId,
        operation: event.operation,
        outcome: event.outcome,
        code: event.code,
        http_status: event.httpStatus,
        latency_ms: Math.round(event.latencyMs * 10) / 10,
        transaction_id: event.transactionId,
        detail: event.detail,
      },
      'wallet call',
    );
    expect(lines).toHaveLength(2);
    expect(sameTime(lines[0]!)).toBe(sameTime(lines[1]!));
  });
});

it('writes a mixin’s fields (the trace ids) ahead of the line’s own, as pino merges them', () => {
  const sink = logSink();
  const logger = pino({ name: 'gateway', base: { pid: 7 }, mixin: () => ({ trace_id: 'abc"', span_id: 'def', n: 1, skip: undefined }) }, sink.destination);
  lineWriter(logger).write('warn', ',"request_id":"r"', 'wallet call');
  logger.warn({ request_id: 'r' }, 'wallet call');
  expect(sameTime(sink.logs[0]!)).toBe(sameTime(sink.logs[1]!));
});
