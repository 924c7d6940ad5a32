import type { Operation } from '../wallet/protocol';
import type { FaultAction, FaultDecision } from './faults';

/** One request the simulator received, and what it did with it. */
export interface RecordedCall {
  readonly seq: number;
  readonly operation: Operation | 'health-check';
  /** The request path, e.g. /api/wallet/debit. */
  readonly path: string;
  /** The Host header (HTTP/2: :authority) as received. */
  readonly host: string | undefined;
  /** Epoch milliseconds (performance-based: monotonic within the run, sub-millisecond). */
  readonly at: number;
  /** '1.1' or '2.0'. */
  readonly httpVersion: string;
  /** The caller's end of the connection the call came on (address:port): calls on one connection share it. */
  readonly connection: string;
  /** The W3C trace context headers as received (a traced gateway sends them on every call). */
  readonly traceparent: string | undefined;
  readonly tracestate: string | undefined;
  readonly rawBody: string;
  /** The parsed request fields (ids and amounts as decimal strings); undefined when the body did not parse. */
  readonly body: Readonly<Record<string, unknown>> | undefined;
  readonly transactionId: string | undefined;
  /** The wallet code of the outcome (for a dropped answer: the code the applied call came to). */
  readonly code: number | undefined;
  /** HTTP status sent; undefined when no answer went out (reset, hang). */
  readonly httpStatus: number | undefined;
  /** The fault applied: 'fail', 'drop-hang', 'drop-reset', 'nonJson', 'reset', 'latency'. */
  readonly fault: string | undefined;
  readonly faultSource: FaultDecision['source'] | undefined;
  /** Whether this call changed money. */
  readonly applied: boolean;
}

export type MutableCall = { -readonly [K in keyof RecordedCall]: RecordedCall[K] };

export function faultLabel(action: FaultAction): string {
  return action.kind === 'drop' ? `drop-${action.mode}` : action.kind;
}

export class CallLog {
  private entries: MutableCall[] = [];
  private seq = 0;

  start(operation: RecordedCall['operation'], request: { path: string; host: string | undefined; httpVersion: string; connection: string; traceparent: string | undefined; tracestate: string | undefined }, rawBody: string): MutableCall {
    const call: MutableCall = {
      seq: ++this.seq,
      operation,
      path: request.path,
      host: request.host,
      at: performance.timeOrigin + performance.now(),
      httpVersion: request.httpVersion,
      connection: request.connection,
      traceparent: request.traceparent,
      tracestate: request.tracestate,
      rawBody,
      body: undefined,
      transactionId: undefined,
      code: undefined,
      httpStatus: undefined,
      fault: undefined,
      faultSource: undefined,
      applied: false,
    };
    this.entries.push(call);
    return call;
  }

  /** Copies, so a caller's snapshot does not change under it. */
  list(): readonly RecordedCall[] {
    return this.entries.map((c) => ({ ...c }));
  }

  clear(): void {
    this.entries = [];
  }
}
