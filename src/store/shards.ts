import { hash } from 'node:crypto';
import { keysFor, type Keys } from './keys';

/**
 * How the gateway's Redis keys and queues are split into shards (contract 9). A shard is
 * one Redis Cluster hash slot: every key of a shard carries the shard's hash tag, so each multi-key
 * Lua step and each BullMQ queue stays in one slot. A player (player_id, site_id) lives in one
 * shard: its sessions, tokens, rounds and transaction records, so a claim or a settle touches one
 * slot. The count is fixed at deploy time (REDIS_SHARDS); with one shard outside a cluster the keys
 * are the plain `${QUEUE_PREFIX}:…` of before.
 */
export interface ShardLayout {
  readonly count: number;
  /** 0 … count-1. */
  readonly all: readonly number[];
  /** The keys of one shard. */
  keys(shard: number): Keys;
  /** The BullMQ prefix of the shard's queues (its hash tag, or QUEUE_PREFIX with one untagged shard). */
  queuePrefix(shard: number): string;
  /** The cluster slot of every key of the shard (tagged layouts). */
  slot(shard: number): number;
  /** The shard of a player: the first 4 bytes of SHA-256(player_id NUL site_id), modulo count. */
  shardOfPlayer(playerId: string, siteId: string): number;
  /**
   * A new session id or token ref in `shard` names it: `<22 chars>` with one shard, `<22 chars>.<shard>`
   * with more; a wallet's own layout (`idTag`) puts `<wallet id>~` in front, so an id tells its wallet.
   */
  withShard(id: string, shard: number): string;
  /** The shard an id made by withShard names; undefined if it names none of this layout's shards. */
  shardOfId(id: string): number | undefined;
}

export const CLUSTER_SLOTS = 16384;

/** CRC16-CCITT (XMODEM), the checksum Redis Cluster takes modulo 16384 for a key's slot. */
export function crc16(text: string): number {
  let crc = 0;
  for (const byte of Buffer.from(text, 'utf8')) {
    crc ^= byte << 8;
    for (let bit = 0; bit < 8; bit += 1) crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
  }
  return crc;
}

/** The slot of a hash tag's text (what is between the braces). */
export function slotOfTag(tag: string): number {
  return crc16(tag) % CLUSTER_SLOTS;
}

/**
 * Shard k's tag is `${prefix}-s${k}`, or `${prefix}-s${k}.${j}` with the first j that puts its slot in
 * the first sixteenth of the k-th count-th of the slot space. A cluster whose masters own equal
 * contiguous slot ranges (what `redis-cli --cluster create` makes) then holds an even share of the
 * shards on each master, the same shards whatever the prefix (a slot at the start of its range does
 * not fall on either side of a master boundary by chance); plain CRC16 of 16 tags can put half of
 * them on one master.
 */
export function shardTag(prefix: string, shard: number, count: number): string {
  const from = Math.floor((shard * CLUSTER_SLOTS) / count);
  const to = from + Math.max(1, Math.floor((Math.floor(((shard + 1) * CLUSTER_SLOTS) / count) - from) / 16));
  const inRange = (tag: string): boolean => {
    const slot = slotOfTag(tag);
    return slot >= from && slot < to;
  };
  const base = `${prefix}-s${shard}`;
  if (inRange(base)) return base;
  for (let j = 0; ; j += 1) {
    const tag = `${base}.${j}`;
    if (inRange(tag)) return tag;
  }
}

const SHARD_SUFFIX = /\.([0-9]{1,4})$/;
/** Ends the wallet id at the start of a wallet's session ids and token refs. */
export const ID_TAG_END = '~';

/**
 * `tagged`: the keys carry hash tags even with one shard (a cluster needs them); without tags and
 * with one shard the key layout is the one-Redis layout of before. `idTag`: the ids this layout
 * makes start with `<idTag>~`, and an id without it names none of its shards.
 */
export function shardLayout(prefix: string, count: number, tagged = count > 1, idTag?: string): ShardLayout {
  if (!Number.isInteger(count) || count < 1) throw new Error(`a shard count is a positive integer: ${count}`);
  if (tagged && /[{}]/.test(prefix)) throw new Error('QUEUE_PREFIX may not hold { } when the keys are sharded (the shards add their own hash tags)');
  const tags = Array.from({ length: count }, (_, k) => (tagged ? shardTag(prefix, k, count) : prefix));
  const prefixes = tags.map((tag) => (tagged ? `{${tag}}` : prefix));
  const keys = prefixes.map((p) => keysFor(p));
  const plainIds = count === 1;
  const idStart = idTag === undefined ? '' : `${idTag}${ID_TAG_END}`;
  return {
    count,
    all: Object.freeze(prefixes.map((_, k) => k)),
    keys: (shard) => keys[shard]!,
    queuePrefix: (shard) => prefixes[shard]!,
    slot: (shard) => slotOfTag(tags[shard]!),
    shardOfPlayer(playerId, siteId) {
      if (count === 1) return 0;
      return hash('sha256', `${playerId}\u0000${siteId}`, 'buffer').readUInt32BE(0) % count;
    },
    withShard: (id, shard) => `${idStart}${plainIds ? id : `${id}.${shard}`}`,
    shardOfId(id) {
      if (!id.startsWith(idStart) || id.includes(ID_TAG_END, idStart.length)) return undefined;
      if (plainIds) return 0;
      const match = SHARD_SUFFIX.exec(id);
      if (match === null) return undefined;
      const shard = Number(match[1]);
      return shard < count ? shard : undefined;
    },
  };
}

/** The layout a configuration names: QUEUE_PREFIX, the shard count, tags whenever on a cluster. */
export function shardLayoutFor(settings: { readonly QUEUE_PREFIX: string; readonly redisShards: number; readonly REDIS_CLUSTER_NODES?: unknown }): ShardLayout {
  return shardLayout(settings.QUEUE_PREFIX, settings.redisShards, settings.REDIS_CLUSTER_NODES !== undefined || settings.redisShards > 1);
}
