import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import request from 'supertest';
import { loadGatewayConfig, loadSimWallets } from '../../src/config/env';
import { createClosers } from '../../src/lib/lifecycle';
import { freePort } from '../../src/lib/free-port';
import { startGateway } from '../../src/main/gateway';
import { createLogger } from '../../src/observability/logger';
import { createMetrics } from '../../src/observability/metrics';
import { startRegistrySimulators } from '../../src/sim/registry';
import { body, newPlayerId, uniqueId } from '../support/gateway-harness';
import { logSink } from '../support/log-sink';
import { deletePrefix, redisUrl, testPrefix } from '../support/prefix';
import { spawnEntry } from '../support/processes';

/**
 * `npm run sim` with WALLETS_FILE: a simulator per wallet of the registry, each checking its own
 * credentials and signature, so a gateway with the same file plays against all of them.
 */
const SECRETS = { a: 'sim-a-password-01', b: 'sim-b-signing-02', key: 'sim-engine-key-03' } as const;

async function registryFile(): Promise<{ file: string; ports: [number, number] }> {
  const ports: [number, number] = [await freePort(), await freePort()];
  const dir = mkdtempSync(join(tmpdir(), 'wgw-sim-registry-'));
  const file = join(dir, 'wallets.json');
  writeFileSync(
    file,
    JSON.stringify({
      wallets: [
        { id: 'casino-a', base_url: `http://127.0.0.1:${ports[0]}`, basic_user: 'gw-a', basic_password: { env: 'SIM_TEST_A_PASSWORD' }, signing_secret: 'sign-a', provider_id: '1' },
        { id: 'casino-b', base_url: `http://127.0.0.1:${ports[1]}`, basic_user: 'gw-b', basic_password: 'pw-b', signing_secret: SECRETS.b, signature_algo: 'sha512', signature_encoding: 'base64', provider_id: '2' },
      ],
      engines: [{ id: 'studio', keys: [SECRETS.key], wallets: ['casino-a', 'casino-b'] }],
    }),
  );
  return { file, ports };
}

it('serves every wallet of the registry with its own credentials and signature: a gateway with the same file plays against both', async () => {
  const closers = createClosers();
  const prefix = testPrefix('simreg');
  try {
    const { file } = await registryFile();
    const env = { WALLETS_FILE: file, SIM_TEST_A_PASSWORD: SECRETS.a };
    const sims = await startRegistrySimulators(loadSimWallets(env)!, { host: '127.0.0.1' });
    closers.defer('simulators', () => sims.close());
    closers.defer('prefix', () => deletePrefix(prefix));
    const gateway = await startGateway(
      loadGatewayConfig({ ...env, PORT: '0', REDIS_URL: redisUrl(), QUEUE_PREFIX: prefix, GATEWAY_PROCESSES: '1' }),
      createLogger({ level: 'warn', name: 'sim-registry', destination: logSink().destination }),
      { host: '127.0.0.1', metrics: createMetrics({ defaultMetrics: false }), drainTimeoutMs: 0 },
    );
    closers.defer('gateway', () => gateway.close());
    for (const wallet of ['casino-a', 'casino-b']) {
      const launched = await request(gateway.url).get(`/launch/${wallet}`).query({ token: uniqueId('tok'), player_id: newPlayerId(), site_id: '7', currency: 'EUR', game_id: 'g' }).set('Accept', 'application/json');
      expect(launched.status).toBe(200);
      const sessionId = encodeURIComponent((launched.body as { session_id: string }).session_id);
      const bet = await request(gateway.url).post(`/engine/v1/sessions/${sessionId}/bet`).set('Authorization', `Bearer ${SECRETS.key}`).set('Content-Type', 'application/json').send(body({ round_id: 'r', transaction_id: uniqueId('bet'), amount: '1.00' }));
      expect(bet.status).toBe(200);
      expect(sims.sims.get(wallet)!.walletCalls().map((c) => c.operation)).toEqual(expect.arrayContaining(['authenticate', 'debit']));
    }
    // Each simulator refuses the other wallet's credentials.
    const a = sims.sims.get('casino-a')!;
    const wrong = await fetch(`${a.url}/api/wallet/balance`, { method: 'POST', headers: { authorization: `Basic ${Buffer.from('gw-b:pw-b').toString('base64')}`, 'content-type': 'application/json' }, body: '{}' });
    expect(wrong.status).toBe(401);
  } finally {
    await closers.closeAll();
  }
});

it('`npm run sim` prints each wallet\'s simulator and no secret', async () => {
  const { file, ports } = await registryFile();
  const child = await spawnEntry('src/sim/main.ts', { WALLETS_FILE: file, SIM_TEST_A_PASSWORD: SECRETS.a });
  try {
    await child.waitForOutput(`wallet casino-b: simulator listening on http://127.0.0.1:${ports[1]}`);
    expect(child.output()).toContain(`wallet casino-a: simulator listening on http://127.0.0.1:${ports[0]} (HMAC-sha256 hex`);
    expect(child.output()).toContain('(HMAC-sha512 base64');
    for (const secret of Object.values(SECRETS)) expect(child.output()).not.toContain(secret);
  } finally {
    await child.stop();
  }
});
