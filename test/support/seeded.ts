/** A fixed-seed LCG (Numerical Recipes constants), so a failing random case replays. */
export function seeded(start: number): { next: () => number; int: (n: number) => number; pick: <T>(items: readonly T[]) => T } {
  let seed = start;
  const next = (): number => {
    seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0;
    return seed / 2 ** 32;
  };
  const int = (n: number): number => Math.floor(next() * n);
  return { next, int, pick: <T>(items: readonly T[]): T => items[int(items.length)] as T };
}
