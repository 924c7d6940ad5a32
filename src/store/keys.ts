/**
 * Every Redis key the store writes, under QUEUE_PREFIX. With a prefix that is a Redis Cluster hash
 * tag (`{wgw}`) every key lands in one slot, so the multi-key Lua scripts stay valid in a cluster.
 */
export interface Keys {
  session(sessionId: string): string;
  /**
   * SET of the ids still pending under one wallet token. Sessions of a relaunch share the token, and
   * terminate deactivates it for all of them, so `end` waits for this set, not a per-session one.
   */
  tokenPending(tokenRef: string): string;
  transaction(transactionId: string): string;
  /** A wallet round of one player: bet, bet_round, bet_amount, closed_by, rollback, open (credits/rollbacks not final). */
  round(playerId: string, siteId: string, walletRoundId: string): string;
  /** ZSET transaction id → time after which a pending record with no job behind it is re-driven. */
  pendingIndex(): string;
  /** ZSET transaction id → time of death, for the operators' list. */
  deadIndex(): string;
}

export function keysFor(prefix: string): Keys {
  return {
    session: (id) => `${prefix}:session:${id}`,
    tokenPending: (ref) => `${prefix}:token-pending:${ref}`,
    transaction: (id) => `${prefix}:tx:${id}`,
    round: (player, site, round) => `${prefix}:round:${player}:${site}:${round}`,
    pendingIndex: () => `${prefix}:pending`,
    deadIndex: () => `${prefix}:dead`,
  };
}
