import { ConfigError } from '../../src/config/env';

/** The message of the ConfigError `load` throws; a configuration it accepts fails the test. */
export function messageOf(load: () => unknown): string {
  try {
    load();
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as Error).message;
  }
  throw new Error('the configuration was accepted');
}

/** A valid single-wallet environment whose secret values a test can look for in a message. */
export const VALID_ENV = Object.freeze({
  WALLET_BASE_URL: 'http://wallet.test',
  WALLET_BASIC_USER: 'gw',
  WALLET_BASIC_PASSWORD: 'pw-value-1',
  WALLET_SIGNING_SECRET: 'signing-value-2',
  PROVIDER_ID: '1',
  ENGINE_API_KEY: 'engine-value-3',
});
