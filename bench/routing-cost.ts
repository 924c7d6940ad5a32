import type { EngineEntry } from '../src/config/registry';
import type { Engine } from '../src/engine';
import { createRouting } from '../src/engine/routing';
import { bearerOwner } from '../src/http/auth';
import { createMetrics, walletMetrics } from '../src/observability/metrics';
import { walletOfSessionId } from '../src/registry/wallet-layout';

/**
 * `npx tsx bench/routing-cost.ts [calls]` (default 2,000,000): the CPU the registry (contract 11)
 * adds to one bet on the gateway's hot path, step by step, in this process: finding the calling
 * engine by its key, routing a session call to its wallet's use cases, the wallet label on the
 * wallet-call series (walletMetrics), and the wallet on the request line. Each step against what
 * a single-wallet gateway does in its place, with 1 wallet and 1 engine key and with 30 wallets and
 * 30 engines of 2 keys. docs/performance.md keeps the numbers.
 */
const ANSWER = { kind: 'answered' } as const;

/** CPU µs per call of `fn`, after a warm-up of a tenth as many calls. */
async function perCall(calls: number, fn: (i: number) => unknown): Promise<number> {
  for (let i = 0; i < calls / 10; i += 1) await fn(i);
  const before = process.cpuUsage();
  for (let i = 0; i < calls; i += 1) await fn(i);
  const used = process.cpuUsage(before);
  return (used.user + used.system) / calls;
}

/** A wallet's use cases reduced to a bet that answers at once: what is measured is the way to it. */
function stubEngine(): Engine {
  return { bet: () => Promise.resolve(ANSWER) } as unknown as Engine;
}

async function main(): Promise<void> {
  const calls = Number(process.argv[2] ?? 2_000_000);
  const rows: [string, number][] = [];
  const body = {};
  const context = { requestId: 'r' };

  for (const wallets of [1, 30]) {
    const ids = wallets === 1 ? ['default'] : Array.from({ length: wallets }, (_, i) => `casino-${i}`);
    const engines = new Map(ids.map((id) => [id, stubEngine()]));
    const entries: EngineEntry[] = ids.map((id, i) => ({ id: `studio-${i}`, keys: wallets === 1 ? [`key-${i}`] : [`key-${i}`, `next-${i}`], wallets: [id] }));
    const last = entries.at(-1)!;
    const session = wallets === 1 ? 'QmFzZTY0U2Vzc2lvbklkMA' : `${last.wallets[0]}~QmFzZTY0U2Vzc2lvbklkMA`;
    const direct = engines.get(last.wallets[0]!)!;
    const scoped = createRouting(engines).scopeOf(last);
    const owner = bearerOwner(entries);
    const header = `Bearer ${last.keys[0]}`;
    const single = bearerOwner([{ keys: ['key-0'] }]);

    const routed = await perCall(calls, () => scoped.bet(session, body, context));
    const plain = await perCall(calls, () => direct.bet(session, body, context));
    rows.push([`route a session call to its wallet (${wallets} wallet${wallets === 1 ? '' : 's'})`, routed - plain]);
    const found = await perCall(calls / 10, () => owner(header));
    const oneKey = await perCall(calls / 10, () => single('Bearer key-0'));
    const keys = entries.flatMap((e) => e.keys).length;
    rows.push([`find the engine by its key (${entries.length} engine${entries.length === 1 ? '' : 's'}, ${keys} key${keys === 1 ? '' : 's'}) over one key`, found - oneKey]);
    rows.push([`the wallet on the request line (${wallets} wallet${wallets === 1 ? '' : 's'})`, await perCall(calls, () => walletOfSessionId(session))]);
  }

  const metrics = createMetrics({ defaultMetrics: false });
  const scopedMetrics = walletMetrics(metrics, 'casino-b');
  const labelled = await perCall(calls, () => {
    scopedMetrics.walletCalls.inc({ operation: 'debit', outcome: 'ok', code: '1' });
    scopedMetrics.walletLatency.observe({ operation: 'debit' }, 0.004);
  });
  const direct = createMetrics({ defaultMetrics: false });
  const walletLabel = await perCall(calls, () => {
    direct.walletCalls.inc({ operation: 'debit', outcome: 'ok', code: '1', wallet: 'casino-b' });
    direct.walletLatency.observe({ operation: 'debit', wallet: 'casino-b' }, 0.004);
  });
  const unlabelled = createMetrics({ defaultMetrics: false });
  const bare = await perCall(calls, () => {
    unlabelled.walletCalls.inc({ operation: 'debit', outcome: 'ok', code: '1' });
    unlabelled.walletLatency.observe({ operation: 'debit' }, 0.004);
  });
  rows.push(['the wallet label on a wallet call\'s two series (walletMetrics) over none', labelled - bare]);
  rows.push(['  of which the label itself (recorded directly with it)', walletLabel - bare]);

  console.log(`CPU µs per bet, ${calls} calls a step, node ${process.version}`);
  for (const [what, us] of rows) console.log(`${us.toFixed(3).padStart(8)}  ${what}`);
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
