import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadGatewayConfig } from '../../src/config/env';
import type { Registry } from '../../src/config/registry';
import { planReload, planSummary } from '../../src/registry/reload-plan';

/** What a reload of WALLETS_FILE changes (contract 11), worked out before anything is touched. */
const dir = mkdtempSync(join(tmpdir(), 'wgw-reload-plan-'));
let files = 0;

const wallet = (id: string, extra: Record<string, unknown> = {}) => ({ id, base_url: `http://${id}.example`, basic_user: 'gw', basic_password: 'pw-0001', signing_secret: `sign-${id}`, provider_id: '1', ...extra });
const engine = (id: string, keys: string[], wallets: string[]) => ({ id, keys, wallets });

function registryOf(content: unknown): Registry {
  files += 1;
  const path = join(dir, `wallets-${files}.json`);
  writeFileSync(path, JSON.stringify(content));
  return loadGatewayConfig({ WALLETS_FILE: path }).registry;
}

const base = registryOf({ wallets: [wallet('default'), wallet('casino-b')], engines: [engine('studio-x', ['key-x-1'], ['default', 'casino-b'])] });

function planned(next: Registry) {
  const result = planReload(base, next);
  if (!result.ok) throw new Error(result.message);
  return planSummary(result.plan);
}

describe('planReload', () => {
  it('the same file changes nothing', () => {
    expect(planned(registryOf({ wallets: [wallet('default'), wallet('casino-b')], engines: [engine('studio-x', ['key-x-1'], ['default', 'casino-b'])] }))).toEqual({
      added: [],
      removed: [],
      changed: [],
      engines_changed: [],
    });
  });

  it('tells wallets added, removed and changed (a secret, a limit), and the engines whose keys or wallets changed', () => {
    const next = registryOf({
      wallets: [wallet('default', { signing_secret: 'sign-rotated' }), wallet('casino-c', { max_in_flight: 3 })],
      engines: [engine('studio-x', ['key-x-1', 'key-x-2'], ['default']), engine('studio-y', ['key-y-1'], ['casino-c'])],
    });
    expect(planned(next)).toEqual({ added: ['casino-c'], removed: ['casino-b'], changed: ['default'], engines_changed: ['studio-x', 'studio-y'] });
  });

  it('a limit alone is a change', () => {
    const next = registryOf({ wallets: [wallet('default'), wallet('casino-b', { max_in_flight: 9 })], engines: [engine('studio-x', ['key-x-1'], ['default', 'casino-b'])] });
    expect(planned(next).changed).toEqual(['casino-b']);
  });

  it('an engine removed is a change of engines', () => {
    const next = registryOf({ wallets: [wallet('default'), wallet('casino-b')] });
    expect(planned(next).engines_changed).toEqual(['studio-x']);
  });

  it('refuses a file whose home wallet (default, else the first) is another: it moves with a restart only', () => {
    const result = planReload(base, registryOf({ wallets: [wallet('casino-b')] }));
    expect(result).toEqual({ ok: false, message: expect.stringContaining('the home wallet "default"') });
    const firstIsHome = registryOf({ wallets: [wallet('casino-a'), wallet('casino-b')] });
    expect(planReload(firstIsHome, registryOf({ wallets: [wallet('casino-b'), wallet('casino-a')] })).ok).toBe(false);
    expect(planReload(firstIsHome, registryOf({ wallets: [wallet('casino-a'), wallet('casino-c')] })).ok).toBe(true);
  });

  it('names no secret in what it reports', () => {
    const next = registryOf({ wallets: [wallet('default', { basic_password: 'pw-rotated-0002' }), wallet('casino-b')], engines: [engine('studio-x', ['key-x-9'], ['default'])] });
    const text = JSON.stringify(planned(next));
    for (const secret of ['pw-rotated-0002', 'pw-0001', 'key-x-9', 'key-x-1']) expect(text).not.toContain(secret);
  });
});
