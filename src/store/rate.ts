import type { RedisClient } from './redis';
import { defineScript, registerScripts, runScript } from './scripts';

/** Events allowed per fixed window (count-in-window-1.lua). */
export interface RateWindow {
  readonly limit: number;
  readonly windowMs: number;
}

export type Allowance = { readonly allowed: true } | { readonly allowed: false; readonly retryAfterMs: number };

const countScript = defineScript<{ key: string; window: RateWindow }>('count-in-window-1', ({ key, window }) => ({
  keys: [key],
  args: [String(window.limit), String(window.windowMs)],
}));

/** Registers the counting step on a connection (a store does it once, when it is made). */
export function registerRate(redis: RedisClient): void {
  registerScripts(redis, [countScript]);
}

/** Counts one event under `key`: allowed while the window's count is within its limit. */
export async function takeInWindow(redis: RedisClient, key: string, window: RateWindow): Promise<Allowance> {
  const [allowed, waitMs] = (await runScript(redis, countScript, { key, window })) as [number, number];
  return allowed === 1 ? { allowed: true } : { allowed: false, retryAfterMs: Math.max(0, waitMs) };
}
