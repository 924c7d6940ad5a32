import { loadGatewayConfig, loadWorkerConfig } from '../../src/config/env';
import { VALID_ENV as valid, messageOf } from '../support/config-message';

/** A bad variable stops the process with a message naming it and what is wrong, never its value. */
describe('configuration errors', () => {
  it.each([
    ['WALLET_BASE_URL', 'ftp://u:secret@x', ['secret', 'ftp://', 'u:']],
    ['WALLET_BASE_URL', 'not a url with hunter2', ['hunter2']],
    ['REDIS_URL', 'http://:redis-pass@cache:6379', ['redis-pass', 'cache:6379']],
    ['WALLET_TIMEOUT_MS', 'ms-hunter2', ['hunter2']],
    ['WALLET_SIGNATURE_ALGO', 'md5-hunter2', ['hunter2']],
    ['PROVIDER_ID', '-hunter2', ['hunter2']],
  ])('%s=%j is named with what is wrong, its value never echoed', (variable, value, hidden) => {
    for (const load of [loadGatewayConfig, loadWorkerConfig]) {
      const message = messageOf(() => load({ ...valid, [variable]: value }));
      expect(message).toContain(`${variable}: `);
      for (const text of hidden) expect(message).not.toContain(text);
    }
  });

  it.each(['SWEEP_INTERVAL_MS', 'DEAD_CHECK_INTERVAL_MS'])('%s past the longest timer (2^31−1 ms) is refused, not run as a 1 ms timer', (variable) => {
    for (const load of [loadGatewayConfig, loadWorkerConfig]) {
      expect(messageOf(() => load({ ...valid, [variable]: '2147483648' }))).toContain(`${variable}: must be at most 2147483647`);
      expect(load({ ...valid, [variable]: '2147483647' })[variable as 'SWEEP_INTERVAL_MS']).toBe(2147483647);
    }
  });

  it('WALLET_TIMEOUT_MS is refused where the workers\' job lock (2 × it + 5 s) would pass the longest timer', () => {
    for (const load of [loadGatewayConfig, loadWorkerConfig]) {
      expect(messageOf(() => load({ ...valid, WALLET_TIMEOUT_MS: '1073739324' }))).toContain('WALLET_TIMEOUT_MS: must be at most 1073739323');
      const config = load({ ...valid, WALLET_TIMEOUT_MS: '1073739323' });
      expect(2 * config.registry.wallets[0]!.client.WALLET_TIMEOUT_MS + 5_000).toBeLessThanOrEqual(2 ** 31 - 1);
    }
  });

  it('bounds the launches of a token: TOKEN_SESSION_CAP (at most 1000, the walk of a token\'s sessions) and TOKEN_LAUNCHES_PER_MINUTE', () => {
    expect(loadGatewayConfig(valid)).toMatchObject({ TOKEN_SESSION_CAP: 100, TOKEN_LAUNCHES_PER_MINUTE: 30 });
    expect(messageOf(() => loadGatewayConfig({ ...valid, TOKEN_SESSION_CAP: '1001' }))).toContain('TOKEN_SESSION_CAP: ');
    expect(messageOf(() => loadGatewayConfig({ ...valid, TOKEN_SESSION_CAP: '0' }))).toContain('TOKEN_SESSION_CAP: ');
    expect(messageOf(() => loadGatewayConfig({ ...valid, TOKEN_LAUNCHES_PER_MINUTE: 'many' }))).toContain('TOKEN_LAUNCHES_PER_MINUTE: ');
  });

  it('ENGINE_API_KEY takes one key, or two separated by a comma during a rotation; anything else is refused, no key echoed', () => {
    expect(loadGatewayConfig(valid).registry.engines[0]!.keys).toEqual(['engine-value-3']);
    expect(loadGatewayConfig({ ...valid, ENGINE_API_KEY: 'old-key-1,new-key-2' }).registry.engines[0]!.keys).toEqual(['old-key-1', 'new-key-2']);
    for (const value of ['old-key-1,new-key-2,third-key-3', 'old-key-1,', ',new-key-2', 'old-key-1, new-key-2']) {
      const message = messageOf(() => loadGatewayConfig({ ...valid, ENGINE_API_KEY: value }));
      expect(message).toContain('ENGINE_API_KEY: must be one key, or two separated by a comma');
      for (const key of ['old-key-1', 'new-key-2', 'third-key-3']) expect(message).not.toContain(key);
    }
  });

  it('says what is wrong with a URL and which variables are missing', () => {
    expect(messageOf(() => loadGatewayConfig({ ...valid, WALLET_BASE_URL: 'ftp://u:secret@x' }))).toContain('WALLET_BASE_URL: must be an http:// or https:// URL');
    const missing = messageOf(() => loadGatewayConfig({ PROVIDER_ID: '1' }));
    for (const name of ['WALLET_BASE_URL', 'WALLET_BASIC_PASSWORD', 'ENGINE_API_KEY']) expect(missing).toMatch(new RegExp(`${name}: .*\\(missing\\)`));
  });
});

describe('Redis topology variables (contract 9)', () => {
  it('defaults to one Redis at REDIS_URL with no replicas waited for', () => {
    const config = loadGatewayConfig(valid);
    expect({ min: config.REDIS_MIN_REPLICAS, wait: config.REDIS_WAIT_MS, sentinels: config.REDIS_SENTINELS }).toEqual({ min: 0, wait: 500, sentinels: undefined });
  });

  it('reads the sentinels as host:port pairs', () => {
    const config = loadWorkerConfig({ ...valid, REDIS_SENTINELS: '10.0.0.1:26379,sentinel-b:26380', REDIS_SENTINEL_NAME: 'wgw-primary' });
    expect(config.REDIS_SENTINELS).toEqual([{ host: '10.0.0.1', port: 26379 }, { host: 'sentinel-b', port: 26380 }]);
  });

  it.each([
    [{ REDIS_SENTINELS: '127.0.0.1:26379' }, 'REDIS_SENTINELS, REDIS_SENTINEL_NAME: set both or neither'],
    [{ REDIS_SENTINEL_NAME: 'mymaster' }, 'REDIS_SENTINELS, REDIS_SENTINEL_NAME: set both or neither'],
    [{ REDIS_SENTINELS: 'no-port', REDIS_SENTINEL_NAME: 'm' }, 'REDIS_SENTINELS: must look like host:port,host:port'],
    [{ REDIS_MIN_REPLICAS: '-1' }, 'REDIS_MIN_REPLICAS: '],
    [{ REDIS_WAIT_MS: '0' }, 'REDIS_WAIT_MS: '],
    [{ REDIS_WAIT_MS: '2147483648' }, 'REDIS_WAIT_MS: must be at most 2147483647'],
    [{ REDIS_CLUSTER_NODES: '127.0.0.1:7000', REDIS_SENTINELS: '127.0.0.1:26379', REDIS_SENTINEL_NAME: 'm' }, 'REDIS_CLUSTER_NODES, REDIS_SENTINELS: one topology or the other'],
  ])('%j is refused: %s', (extra, message) => {
    for (const load of [loadGatewayConfig, loadWorkerConfig]) expect(messageOf(() => load({ ...valid, ...extra }))).toContain(message);
  });
});
