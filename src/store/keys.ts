/**
 * Every Redis key the store writes, under QUEUE_PREFIX. With a prefix that is a Redis Cluster hash
 * tag (`{wgw}`) every key lands in one slot, so the multi-key Lua scripts stay valid in a cluster.
 */
export interface Keys {
  session(sessionId: string): string;
  /**
   * SET of the ids still pending or dead under one wallet token (dead work still needs the token), and of its debits being compensated
   * (whatever token their compensation's rollback is on). Sessions of a relaunch share the token, and terminate deactivates it for all of
   * them, so `end` waits for this set, not a per-session one.
   */
  tokenPending(tokenRef: string): string;
  /**
   * HASH of one wallet token: what its terminate sends (token, player, site, currency, game) and
   * where ending it stands (state: absent = active, `terminating` once the decision is taken,
   * `terminated`; `ending` once an `end` on it is outstanding, which keeps the token's keys without
   * expiry; the send lease, the attempts and the horizon of its terminate).
   */
  token(tokenRef: string): string;
  /**
   * SET of the session ids launched on one token: its terminate waits until each ended or expired.
   * Holds at most TOKEN_SESSION_CAP sessions that still exist (create-session-4.lua).
   */
  tokenSessions(tokenRef: string): string;
  /** Counter of one token's launches in the current window (count-in-window-1.lua), expiring with it. */
  tokenLaunches(tokenRef: string): string;
  /**
   * SET of the token's watched debits (compensated, never applied, re-checked): each is asked once
   * more right before the token is terminated, while the wallet still answers for the token.
   */
  tokenWatch(tokenRef: string): string;
  transaction(transactionId: string): string;
  /** A wallet round of one player: bet, bet_round, bet_amount, closed_by, rollback, open (credits/rollbacks not final), wins (accepted). */
  round(playerId: string, siteId: string, walletRoundId: string): string;
  /** ZSET transaction id → time after which a pending record with no job behind it is re-driven. */
  pendingIndex(): string;
  /** ZSET transaction id → time of death, for the operators' list. */
  deadIndex(): string;
  /** ZSET token ref → time after which an ending token with no terminate job behind it is re-driven. */
  endingIndex(): string;
  /** ZSET token ref → time its terminate was given up (the window passed): for operators. */
  terminateFailedIndex(): string;
  /** ZSET debit id → next `status` check of a debit the wallet said it never applied (contract 5.4). */
  recheckIndex(): string;
  /** HASH: the wallet circuit breaker every process shares (state, probe time, trials). */
  breaker(): string;
  /** The lease of the one process that asks the wallet's health check now. */
  breakerHealthLease(): string;
  /** ZSET process id → until when it counts: the processes sharing the wallet's max_in_flight. */
  inFlightPresence(): string;
  /** HASH process id → the calls it had open at the wallet at its last renewal of inFlightPresence. */
  inFlightCalls(): string;
  /** LIST of one record's wallet attempts (capped; kept while it may still be sent, dropped with its body). */
  attemptLog(transactionId: string): string;
  /** ZSET transaction id → created at, trimmed to the retention: the reconciliation export's order. */
  timeIndex(): string;
  /** ZSET of one player's newest transaction ids → created at (capped, expiring with the retention). */
  playerRecent(playerId: string, siteId: string): string;
  /** STREAM of the operators' actions (capped): the audit trail. */
  audit(): string;
  /** Counter of the audit entries for unknown ids in the current window (count-in-window-1.lua). */
  auditUnknown(): string;
  /**
   * Set while the wallet is being removed from the registry, and after (registry/wallet-retire.ts):
   * create-session-4.lua refuses a launch on a shard that holds it.
   */
  retired(): string;
  /** A counter written before a WAIT that must cover a record another process wrote (src/store/durability.ts). */
  durabilityMarker(): string;
  /** STREAM of the shard's record changes and audit entries on their way to the ledger (contract 12). */
  ledgerOutbox(): string;
}

export function keysFor(prefix: string): Keys {
  return {
    session: (id) => `${prefix}:session:${id}`,
    tokenPending: (ref) => `${prefix}:token-pending:${ref}`,
    token: (ref) => `${prefix}:token:${ref}`,
    tokenSessions: (ref) => `${prefix}:token-sessions:${ref}`,
    tokenLaunches: (ref) => `${prefix}:token-launches:${ref}`,
    tokenWatch: (ref) => `${prefix}:token-watch:${ref}`,
    transaction: (id) => `${prefix}:tx:${id}`,
    round: (player, site, round) => `${prefix}:round:${player}:${site}:${round}`,
    pendingIndex: () => `${prefix}:pending`,
    deadIndex: () => `${prefix}:dead`,
    endingIndex: () => `${prefix}:ending`,
    terminateFailedIndex: () => `${prefix}:terminate-failed`,
    recheckIndex: () => `${prefix}:recheck`,
    breaker: () => `${prefix}:wallet-breaker`,
    breakerHealthLease: () => `${prefix}:wallet-breaker-health`,
    inFlightPresence: () => `${prefix}:wallet-in-flight-presence`,
    inFlightCalls: () => `${prefix}:wallet-in-flight-calls`,
    attemptLog: (id) => `${prefix}:tx-attempts:${id}`,
    timeIndex: () => `${prefix}:tx-time`,
    playerRecent: (player, site) => `${prefix}:player-tx:${player}:${site}`,
    audit: () => `${prefix}:audit`,
    auditUnknown: () => `${prefix}:audit-unknown`,
    durabilityMarker: () => `${prefix}:durability-marker`,
    ledgerOutbox: () => `${prefix}:ledger-outbox`,
    retired: () => `${prefix}:retired`,
  };
}
