/**
 * Every Redis key the store writes, under QUEUE_PREFIX. With a prefix that is a Redis Cluster hash
 * tag (`{wgw}`) every key lands in one slot, so the multi-key Lua scripts stay valid in a cluster.
 */
export interface Keys {
  session(sessionId: string): string;
  /** SET of credit/rollback ids of a session still pending (end waits for it to drain). */
  sessionPending(sessionId: string): string;
  transaction(transactionId: string): string;
  /** A wallet round of one player: bet, bet_round, bet_amount, closed_by, rollback. */
  round(playerId: string, siteId: string, walletRoundId: string): string;
  /** ZSET transaction id → time after which a pending record with no job behind it is re-driven. */
  pendingIndex(): string;
  /** ZSET transaction id → time of death, for the operators' list. */
  deadIndex(): string;
}

export function keysFor(prefix: string): Keys {
  return {
    session: (id) => `${prefix}:session:${id}`,
    sessionPending: (id) => `${prefix}:session-pending:${id}`,
    transaction: (id) => `${prefix}:tx:${id}`,
    round: (player, site, round) => `${prefix}:round:${player}:${site}:${round}`,
    pendingIndex: () => `${prefix}:pending`,
    deadIndex: () => `${prefix}:dead`,
  };
}
