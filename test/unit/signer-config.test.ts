import { basicAuthHeader, hmacSigner } from '../../src/wallet/signer';
import { ConfigError, loadGatewayConfig, loadSimConfig } from '../../src/config/env';

describe('hmacSigner', () => {
  // RFC 4231 test case 2: key "Jefe", data "what do ya want for nothing?"
  const data = 'what do ya want for nothing?';
  it('matches the RFC 4231 vectors', () => {
    expect(hmacSigner('Jefe', 'sha256', 'hex').sign(data)).toBe('5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843');
    expect(hmacSigner('Jefe', 'sha512', 'hex').sign(data)).toBe(
      '164b7a7bfcf819e2e395fbe73b56e0a387bd64222e831fd610270cd7ea2505549758bf75c05a994a6d034f65f8f0e6fdcaeab1a34d4a6b4b636e070a38bce737',
    );
    expect(hmacSigner('Jefe', 'sha256', 'base64').sign(data)).toBe('W9zBRr9gdU5qBCQmCJV1x1oAPwidJzmDnexYuWTsOEM=');
  });

  it('verifies its own signatures and refuses others', () => {
    const signer = hmacSigner('k', 'sha256', 'hex');
    expect(signer.verify('{"a":1}', signer.sign('{"a":1}'))).toBe(true);
    expect(signer.verify('{"a":2}', signer.sign('{"a":1}'))).toBe(false);
    expect(signer.verify('{"a":1}', 'short')).toBe(false);
  });

  it('builds the Basic header', () => {
    expect(basicAuthHeader('Aladdin', 'open sesame')).toBe('Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ==');
  });
});

describe('config', () => {
  const valid = {
    WALLET_BASE_URL: 'http://wallet.example:8090/',
    WALLET_BASIC_USER: 'u',
    WALLET_BASIC_PASSWORD: 'super-secret-password',
    WALLET_SIGNING_SECRET: 'sign-secret',
    PROVIDER_ID: '18446744073709551615',
    ENGINE_API_KEY: 'engine-key',
  };

  it('parses a valid environment into one frozen object with defaults: wallet and engine `default` of the single-wallet variables', () => {
    const config = loadGatewayConfig(valid);
    expect(Object.isFrozen(config)).toBe(true);
    expect(config).toMatchObject({
      PORT: 8080,
      REDIS_URL: 'redis://127.0.0.1:6379',
      QUEUE_PREFIX: 'wgw',
      WALLET_HTTP2: true,
      GAME_URL_TEMPLATE: '/demo-game?session={session_id}',
    });
    expect(config.registry.wallets).toEqual([
      {
        id: 'default',
        client: expect.objectContaining({
          WALLET_BASE_URL: 'http://wallet.example:8090',
          WALLET_SIGNATURE_ALGO: 'sha256',
          WALLET_SIGNATURE_ENCODING: 'hex',
          WALLET_TIMEOUT_MS: 5000,
          WALLET_HTTP2: true,
          walletHostHeader: 'wallet.example:8090',
        }),
        providerId: '18446744073709551615',
        retryDelayUnit: 'ms',
        currencyDigits: {},
        maxInFlight: 256,
      },
    ]);
    expect(config.registry.engines).toEqual([{ id: 'default', keys: ['engine-key'], wallets: ['default'] }]);
  });

  it('parses per-currency digits and multi-bet games', () => {
    const config = loadGatewayConfig({ ...valid, CURRENCY_DIGITS: 'JPY:0,BHD:3', MULTI_BET_GAMES: 'crash, plinko' });
    expect(config.CURRENCY_DIGITS).toEqual({ JPY: 0, BHD: 3 });
    expect(config.MULTI_BET_GAMES).toEqual(['crash', 'plinko']);
  });

  it('reads WALLET_HTTP2 as a boolean', () => {
    expect(loadGatewayConfig({ ...valid, WALLET_HTTP2: 'false' }).WALLET_HTTP2).toBe(false);
    expect(loadGatewayConfig({ ...valid, WALLET_HTTP2: 'false' }).registry.wallets[0]!.client.WALLET_HTTP2).toBe(false);
    expect(loadGatewayConfig({ ...valid, WALLET_HTTP2: 'true' }).WALLET_HTTP2).toBe(true);
  });

  it.each([
    ['WALLET_BASE_URL', { WALLET_BASE_URL: 'ftp://x' }],
    ['PROVIDER_ID', { PROVIDER_ID: '18446744073709551616' }],
    ['PORT', { PORT: 'eighty' }],
    ['RETRY_DELAY_UNIT', { RETRY_DELAY_UNIT: 'minutes' }],
    ['WALLET_SIGNATURE_ALGO', { WALLET_SIGNATURE_ALGO: 'md5' }],
    ['QUEUE_PREFIX', { QUEUE_PREFIX: 'a:b' }],
    ['WALLET_HTTP2', { WALLET_HTTP2: 'maybe' }],
  ])('names %s when it is malformed', (name, override) => {
    expect(() => loadGatewayConfig({ ...valid, ...override })).toThrow(new RegExp(`${name}:`));
  });

  it('names a missing required variable', () => {
    const { ENGINE_API_KEY: _, ...rest } = valid;
    expect(() => loadGatewayConfig(rest)).toThrow(/ENGINE_API_KEY: .*missing/);
  });

  it('never prints a secret value', () => {
    try {
      loadGatewayConfig({ ...valid, WALLET_SIGNATURE_ALGO: 'md5', WALLET_BASIC_PASSWORD: '' , ENGINE_API_KEY: '' });
      throw new Error('expected a ConfigError');
    } catch (err) {
      expect(err).toBeInstanceOf(ConfigError);
      expect((err as Error).message).not.toContain('super-secret-password');
      expect((err as Error).message).toContain('WALLET_BASIC_PASSWORD');
    }
  });

  it('requires admin user and password together', () => {
    expect(() => loadGatewayConfig({ ...valid, ADMIN_USER: 'ops' })).toThrow(/ADMIN_USER, ADMIN_PASSWORD/);
  });

  it('gives the simulator printed defaults', () => {
    expect(loadSimConfig({})).toMatchObject({ SIM_PORT: 8090, SIM_START_BALANCE: '1000.00', WALLET_BASIC_USER: 'gateway' });
  });
});
