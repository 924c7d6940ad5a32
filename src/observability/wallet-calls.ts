import { unredactedSibling, type Logger } from './logger';
import type { Metrics } from './metrics';
import type { WalletCallEvent } from '../wallet/protocol';

/**
 * The wallet client's onCall hook, in the gateway and the worker alike: one log line and the
 * metrics per wallet call, with the gateway request it ran for (none in the worker). The event
 * carries no body and no token.
 */
export function walletCallObserver(logger: Logger, metrics: Metrics | undefined): (event: WalletCallEvent) => void {
  // Every field below is picked from the event (no body, no token, no header): no redaction pass.
  const log = unredactedSibling(logger);
  return (event) => {
    metrics?.walletCalls.inc({ operation: event.operation, outcome: event.outcome, code: event.code === null ? 'none' : String(event.code) });
    metrics?.walletLatency.observe({ operation: event.operation }, event.latencyMs / 1000);
    log[event.outcome === 'unknown' ? 'warn' : 'info'](
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
  };
}
