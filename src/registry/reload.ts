import { hostname } from 'node:os';
import type { Registry } from '../config/registry';
import { ConfigError } from '../lib/config-error';
import { codedError, type ErrorCode } from '../lib/error-codes';
import type { RedisClient } from '../store/redis';
import type { ShardLayout } from '../store/shards';
import { planReload, planSummary, type ReloadPlan } from './reload-plan';
import { reinstateWallet, retireWallet, type WalletUse } from './wallet-retire';

/**
 * One process's reload of WALLETS_FILE (contract 11): read and validate the file whole, work out
 * what changes, refuse the removal of a wallet still in use (a look at Redis), then apply. Nothing
 * is applied unless every step before passed: a refused reload leaves the process as it was.
 * Reloads of one process run one at a time (a SIGHUP during a reload from the admin route waits).
 */
export interface ProcessId {
  readonly kind: 'gateway' | 'worker';
  readonly pid: number;
  readonly host: string;
}

export const processId = (kind: ProcessId['kind']): ProcessId => ({ kind, pid: process.pid, host: hostname() });

export type ReloadResult =
  | { readonly ok: true; readonly added: string[]; readonly removed: string[]; readonly changed: string[]; readonly engines_changed: string[] }
  | { readonly ok: false; readonly status: number; readonly error: { readonly code: ErrorCode; readonly message: string }; readonly in_use?: readonly WalletUse[] };

export interface ReloaderDeps {
  /** Reads WALLETS_FILE again (ConfigError naming the field); undefined without it. */
  readonly readRegistry: (() => Registry) | undefined;
  readonly current: () => Registry;
  /** Swaps the process over to `plan.next`: opens what was added, reopens what changed, closes what left. */
  readonly apply: (plan: ReloadPlan) => Promise<void>;
  readonly redis: RedisClient;
  readonly layoutOf: (walletId: string) => ShardLayout;
}

export interface Reloader {
  /**
   * Reads, checks and applies; `checkOnly`: everything but the apply (the admin route's look before
   * it asks every process), and the wallets to remove stay marked retired when it passes.
   */
  reload(options?: { readonly checkOnly?: boolean }): Promise<ReloadResult>;
  /** Resolves once no reload runs or waits (a close waits for it: nothing opens after the close). */
  idle(): Promise<void>;
}

const refused = (code: ErrorCode, message?: string, extra: { in_use?: readonly WalletUse[] } = {}): ReloadResult => {
  const error = codedError(code, { message });
  return { ok: false, status: error.httpStatus, error: { code, message: error.message }, ...extra };
};

/** `casino-b (2 open sessions, 1 dead)` */
function useText(use: WalletUse): string {
  const parts = (
    [
      ['open sessions', use.sessions],
      ['pending or compensating', use.pending],
      ['dead', use.dead],
      ['terminates to run', use.ending],
      ['debits watched', use.watched],
    ] as const
  )
    .filter(([, n]) => n > 0)
    .map(([what, n]) => `${n} ${what}`);
  return `${use.wallet} (${parts.join(', ')})`;
}

export function createReloader(deps: ReloaderDeps): Reloader {
  let queue: Promise<unknown> = Promise.resolve();

  async function once(checkOnly: boolean): Promise<ReloadResult> {
    if (deps.readRegistry === undefined) return refused('NOTHING_TO_RELOAD');
    let next: Registry;
    try {
      next = deps.readRegistry();
    } catch (err) {
      // The message names fields and never a value (config/registry.ts).
      if (err instanceof ConfigError) return refused('REGISTRY_INVALID', err.message.replace(/^invalid configuration:\n\s*/, '').replace(/\n\s*/g, '; '));
      throw err;
    }
    const planned = planReload(deps.current(), next);
    if (!planned.ok) return refused('REGISTRY_INVALID', planned.message);
    const { plan } = planned;
    const retired: string[] = [];
    const inUse: WalletUse[] = [];
    for (const wallet of plan.removed) {
      const result = await retireWallet(deps.redis, wallet.id, deps.layoutOf(wallet.id));
      if (result.ok) retired.push(wallet.id);
      else inUse.push(result.use);
    }
    if (inUse.length > 0) {
      // Refused: the wallets marked here take launches again.
      for (const id of retired) await reinstateWallet(deps.redis, deps.layoutOf(id));
      return refused('WALLET_IN_USE', `cannot remove ${inUse.map(useText).join('; ')}: nothing was changed`, { in_use: inUse });
    }
    // Only looked (the admin route, before it asks every process): the marks stay, so no launch
    // slips in between this look and the processes' own.
    if (checkOnly) return { ok: true, ...planSummary(plan) };
    for (const wallet of plan.added) await reinstateWallet(deps.redis, deps.layoutOf(wallet.id));
    await deps.apply(plan);
    return { ok: true, ...planSummary(plan) };
  }

  return {
    reload(options = {}) {
      const run = queue.then(() => once(options.checkOnly === true));
      queue = run.catch(() => undefined);
      return run;
    },
    async idle() {
      let seen: Promise<unknown>;
      do {
        seen = queue;
        await seen;
      } while (seen !== queue);
    },
  };
}
