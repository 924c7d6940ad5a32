/** Unit tests (*.test.ts), integration (*.int.test.ts) and e2e (*.e2e.test.ts) share one run;
 *  the global setup makes sure a Redis answers at REDIS_URL (starting one if needed). */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  transform: { '^.+\\.ts$': ['@swc/jest', { jsc: { target: 'es2022' } }] },
  globalSetup: '<rootDir>/test/support/global-setup.ts',
  globalTeardown: '<rootDir>/test/support/global-teardown.ts',
  testTimeout: 30000,
  maxWorkers: 2,
};
