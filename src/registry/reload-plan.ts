import { homeWalletId, type EngineEntry, type Registry, type WalletEntry } from '../config/registry';

/**
 * What a reload of WALLETS_FILE changes (contract 11, "Reload without restart"), worked out before
 * anything is touched so the reload is all or nothing: the wallets added, removed and changed
 * (credentials, secrets, signer, limits: anything of the entry), and whether the engines changed.
 * Pure: the look at Redis for the removed wallets (registry/wallet-retire.ts) and the swap itself
 * are the processes' own.
 */
export interface ReloadPlan {
  readonly next: Registry;
  readonly added: readonly WalletEntry[];
  readonly removed: readonly WalletEntry[];
  readonly changed: readonly WalletEntry[];
  /** Ids of engines added, removed or with other keys or wallets. */
  readonly enginesChanged: readonly string[];
}

export type PlanResult = { readonly ok: true; readonly plan: ReloadPlan } | { readonly ok: false; readonly message: string };

/**
 * The home wallet (`default`, else the first) holds the deployment's upkeep schedulers and is the
 * one the operators' pages open on: it stays what it was at start, or processes started before and
 * after the reload would disagree about where the schedulers live.
 */
export function planReload(current: Registry, next: Registry): PlanResult {
  const home = homeWalletId(current);
  if (homeWalletId(next) !== home) {
    return { ok: false, message: `WALLETS_FILE wallets: the home wallet "${home}" (default, else the first) must stay; it changes only with a restart` };
  }
  const added = next.wallets.filter((w) => current.wallet(w.id) === undefined);
  const removed = current.wallets.filter((w) => next.wallet(w.id) === undefined);
  const changed = next.wallets.filter((w) => {
    const before = current.wallet(w.id);
    return before !== undefined && !sameEntry(before, w);
  });
  return { ok: true, plan: { next, added, removed, changed, enginesChanged: changedEngines(current.engines, next.engines) } };
}

function changedEngines(before: readonly EngineEntry[], after: readonly EngineEntry[]): string[] {
  const old = new Map(before.map((e) => [e.id, e]));
  const now = new Map(after.map((e) => [e.id, e]));
  const ids = new Set([...old.keys(), ...now.keys()]);
  return [...ids].filter((id) => !sameEntry(old.get(id), now.get(id))).sort();
}

/** Entries are frozen plain data (strings, numbers, arrays, records): equal when their JSON is. */
function sameEntry(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

/** What a reload reports (no secret: ids only). */
export function planSummary(plan: ReloadPlan): { added: string[]; removed: string[]; changed: string[]; engines_changed: string[] } {
  const ids = (entries: readonly WalletEntry[]) => entries.map((w) => w.id);
  return { added: ids(plan.added), removed: ids(plan.removed), changed: ids(plan.changed), engines_changed: [...plan.enginesChanged] };
}
