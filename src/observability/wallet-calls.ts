import { lineWriter, logNumber, logString, type Logger } from './logger';
import type { Metrics } from './metrics';
import type { WalletCallEvent } from '../wallet/protocol';

/**
 * The wallet client's onCall hook, in the gateway and the worker alike: one log line and the
 * metrics per wallet call, with the gateway request it ran for (none in the worker). The event
 * carries no body and no token.
 */
export function walletCallObserver(logger: Logger, metrics: Metrics | undefined): (event: WalletCallEvent) => void {
  // Every field below is picked from the event (no body, no token, no header): no redaction pass.
  const lines = lineWriter(logger);
  return (event) => {
    metrics?.walletCalls.inc({ operation: event.operation, outcome: event.outcome, code: event.code === null ? 'none' : String(event.code) });
    metrics?.walletLatency.observe({ operation: event.operation }, event.latencyMs / 1000);
    const level = event.outcome === 'unknown' ? 'warn' : 'info';
    if (!lines.enabled(level)) return;
    lines.write(
      level,
      optional('request_id', event.requestId) +
        optional('wallet_request_id', event.walletRequestId) +
        `,"operation":${logString(event.operation)},"outcome":${logString(event.outcome)}` +
        `,"code":${event.code === null ? 'null' : logNumber(event.code)},"http_status":${event.httpStatus === null ? 'null' : logNumber(event.httpStatus)}` +
        `,"latency_ms":${logNumber(Math.round(event.latencyMs * 10) / 10)}` +
        optional('transaction_id', event.transactionId) +
        optional('detail', event.detail),
      'wallet call',
    );
  };
}

/** A string field that is left out when undefined, as pino leaves it out. */
const optional = (key: string, value: string | undefined): string => (value === undefined ? '' : `,"${key}":${logString(value)}`);
