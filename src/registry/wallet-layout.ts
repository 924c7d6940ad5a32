import { DEFAULT_WALLET_ID, REGISTRY_ID } from '../config/registry';
import { ID_TAG_END, shardLayout, shardLayoutFor, type ShardLayout } from '../store/shards';

/**
 * Wallets are separate worlds (contract 11): each wallet's sessions, tokens, rounds, transaction
 * records, indexes, breaker and queues live under keys of its own, so the same token, player, round
 * or transaction id in two wallets never meets. Wallet `default` keeps the key layout of a
 * single-wallet deployment (`${QUEUE_PREFIX}:…`, `{${QUEUE_PREFIX}-s<k>}:…`), so its data stays
 * readable; wallet `w` lives under `${QUEUE_PREFIX}:w:<w>:…` (sharded: `{${QUEUE_PREFIX}:w:<w>-s<k>}:…`),
 * each shard still one slot of one wallet's players. Its session ids and token refs start with
 * `<w>~`, so an engine call finds the wallet from the session id alone.
 */
export function walletLayout(settings: { readonly QUEUE_PREFIX: string; readonly redisShards: number; readonly REDIS_CLUSTER_NODES?: unknown }, walletId: string): ShardLayout {
  if (walletId === DEFAULT_WALLET_ID) return shardLayoutFor(settings);
  const tagged = settings.REDIS_CLUSTER_NODES !== undefined || settings.redisShards > 1;
  return shardLayout(`${settings.QUEUE_PREFIX}:w:${walletId}`, settings.redisShards, tagged, walletId);
}

/** The wallet a session id names (walletLayout): the id before `~`, or `default` without one. */
export function walletOfSessionId(sessionId: string): string | undefined {
  const end = sessionId.indexOf(ID_TAG_END);
  if (end === -1) return DEFAULT_WALLET_ID;
  const walletId = sessionId.slice(0, end);
  return REGISTRY_ID.test(walletId) ? walletId : undefined;
}
