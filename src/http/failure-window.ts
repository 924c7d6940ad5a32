/**
 * A sliding window of failures per key (a client address): after `max` failures within
 * `windowMs` the key waits until the oldest of them leaves the window. In memory and per process;
 * bounded to `maxKeys` keys, so a flood of addresses cannot grow it without limit.
 */
export interface FailureLimit {
  readonly max: number;
  readonly windowMs: number;
  readonly maxKeys: number;
}

export interface FailureWindow {
  /** How long `key` must wait before it may try again; 0 when it may now. */
  waitMs(key: string): number;
  fail(key: string): void;
}

export function failureWindow(limit: FailureLimit, clock: () => number = Date.now): FailureWindow {
  // Each key's failure times, oldest first, at most `max` of them.
  const failures = new Map<string, number[]>();

  const recent = (key: string, now: number): number[] => {
    const times = (failures.get(key) ?? []).filter((t) => t > now - limit.windowMs);
    if (times.length === 0) failures.delete(key);
    else failures.set(key, times);
    return times;
  };

  return {
    waitMs(key) {
      const now = clock();
      const times = recent(key, now);
      return times.length >= limit.max ? (times[0] as number) + limit.windowMs - now : 0;
    },
    fail(key) {
      const now = clock();
      const times = recent(key, now);
      times.push(now);
      failures.set(key, times.slice(-limit.max));
      if (failures.size > limit.maxKeys) {
        for (const other of failures.keys()) recent(other, now);
        // Still full of live keys: forget the longest-known one (Map keeps insertion order).
        if (failures.size > limit.maxKeys) failures.delete(failures.keys().next().value as string);
      }
    },
  };
}
