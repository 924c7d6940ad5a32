import { randomBytes } from 'node:crypto';
import Redis from 'ioredis';

export function redisUrl(): string {
  return process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
}

/** A key prefix no other test uses: tests isolate by QUEUE_PREFIX. */
export function testPrefix(label: string): string {
  return `wgwtest-${label}-${randomBytes(4).toString('hex')}`;
}

/** Deletes every key under the prefix (BullMQ's `prefix:queue:...` and the store's `prefix:...`). */
export async function deletePrefix(prefix: string, url = redisUrl()): Promise<void> {
  const redis = new Redis(url);
  try {
    // Plain keys (a registry wallet's too: `prefix:w:<id>:…`), and the hash-tagged keys of a sharded
    // layout (`{prefix-s3}:…`, a registry wallet's `{prefix:w:<id>-s3}:…`).
    for (const pattern of [`${prefix}:*`, `{${prefix}-s*`, `{${prefix}:w:*`]) {
      let cursor = '0';
      do {
        const [next, keys] = await redis.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
        cursor = next;
        if (keys.length > 0) await redis.unlink(...keys);
      } while (cursor !== '0');
    }
  } finally {
    redis.disconnect();
  }
}
