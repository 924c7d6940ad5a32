/** A player's newest transaction ids kept for the operators' "recent rounds". */
export const PLAYER_RECENT_CAP = 200;

/**
 * Which new records trim the operators' indexes (src/store/lua/includes/record-indexes.lua): one
 * in TRIM_EVERY, chosen by a hash of the record's id, so a repeat of a claim decides alike and
 * sequential ids spread evenly. A trim costs the claim two commands (~12k instructions each);
 * between trims the time index keeps entries past the retention and a player's index grows past
 * its cap by the player's claims since their last trimming one (geometric: 15 on average, over
 * 100 with probability (15/16)^100 < 0.2 %).
 */
export const TRIM_EVERY = 16;

/** FNV-1a over the id's UTF-16 units, then murmur3's finalizer (ids that differ in a last digit differ in every bit). */
export function trimsIndexes(transactionId: string): boolean {
  let hash = 0x811c9dc5;
  for (let i = 0; i < transactionId.length; i += 1) hash = Math.imul(hash ^ transactionId.charCodeAt(i), 0x01000193);
  hash = Math.imul(hash ^ (hash >>> 16), 0x85ebca6b);
  hash = Math.imul(hash ^ (hash >>> 13), 0xc2b2ae35);
  return ((hash ^ (hash >>> 16)) >>> 0) % TRIM_EVERY === 0;
}
