/**
 * Four projects: `unit` (test/unit/*.test.ts, pure code, no setup: `npm test -- --selectProjects
 * unit` runs in seconds), `int` (*.int.test.ts, real Redis and HTTP), `model` (test/model, the
 * property-based money model on a real Redis) and `e2e` (*.e2e.test.ts, child processes and the
 * browser). The global setup of int, model and e2e makes sure a Redis answers at
 * REDIS_URL (starting one if needed); e2e's also installs what its tests need (Chromium).
 */
const shared = {
  testEnvironment: 'node',
  transform: { '^.+\\.ts$': ['@swc/jest', { jsc: { target: 'es2022' } }] },
  globalTeardown: '<rootDir>/test/support/global-teardown.ts',
};

module.exports = {
  testTimeout: 30000,
  maxWorkers: 2,
  projects: [
    { ...shared, displayName: 'unit', roots: ['<rootDir>/test/unit'], testMatch: ['**/*.test.ts'], globalTeardown: undefined },
    { ...shared, displayName: 'int', roots: ['<rootDir>/test/int'], testMatch: ['**/*.int.test.ts'], globalSetup: '<rootDir>/test/support/global-setup.ts' },
    { ...shared, displayName: 'model', roots: ['<rootDir>/test/model'], testMatch: ['**/*.model.test.ts'], globalSetup: '<rootDir>/test/support/global-setup.ts' },
    { ...shared, displayName: 'e2e', roots: ['<rootDir>/test/e2e'], testMatch: ['**/*.e2e.test.ts'], globalSetup: '<rootDir>/test/support/e2e-setup.ts' },
  ],
};
