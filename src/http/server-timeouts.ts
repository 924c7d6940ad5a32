import type { Server } from 'node:http';
import { BODY_TIMEOUT_MS } from './body';

/**
 * The gateway server's connection timeouts, set deliberately rather than left at Node's defaults
 * (headers 60 s, whole request 300 s, keep-alive 5 s). docs/operators.md explains each.
 */
export interface ServerTimeouts {
  /** A request's headers must have arrived this long after its first byte (slow-header clients). */
  readonly headersTimeoutMs: number;
  /**
   * The whole request, headers and body. A backstop: the engine API answers a late body itself
   * with a JSON 408 after BODY_TIMEOUT_MS; this one cuts any other route's late body (Node
   * answers a bare 408, checking every 30 s).
   */
  readonly requestTimeoutMs: number;
  /**
   * An idle keep-alive connection is kept this long. Above the 60 s idle timeout of common load
   * balancers, so the balancer, not the gateway, closes an idle connection and never sends a
   * request on one the gateway is closing.
   */
  readonly keepAliveTimeoutMs: number;
}

export const SERVER_TIMEOUTS: ServerTimeouts = Object.freeze({
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 10_000 + BODY_TIMEOUT_MS,
  keepAliveTimeoutMs: 65_000,
});

export function applyServerTimeouts(server: Server, timeouts: ServerTimeouts = SERVER_TIMEOUTS): void {
  server.headersTimeout = timeouts.headersTimeoutMs;
  server.requestTimeout = timeouts.requestTimeoutMs;
  server.keepAliveTimeout = timeouts.keepAliveTimeoutMs;
}
