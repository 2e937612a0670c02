// One jest run over every project. Each test file isolates itself (own vhost / database),
// so files may run in parallel; --runInBand is not required.
const { pathsToModuleNameMapper } = require('./scripts/dev/jest-paths.js');

/** @type {import('jest').Config} */
module.exports = {
  testEnvironment: 'node',
  transform: { '^.+\\.(t|j)sx?$': ['@swc/jest', { jsc: { target: 'es2022' }, module: { type: 'commonjs' } }] },
  moduleNameMapper: pathsToModuleNameMapper(),
  // scripts/: specs of the tooling itself (e.g. the test-layout rule). infra/: the deployment
  // artefacts, each checked by the tool that consumes it (promtool, amtool, Prometheus, kubectl, the broker).
  testMatch: [
    '<rootDir>/{apps,libs,e2e,scripts,infra}/**/*.spec.ts',
    '<rootDir>/{apps,libs,e2e,scripts,infra}/**/*.test.ts',
  ],
  testPathIgnorePatterns: ['/node_modules/', '/dist/'],
  // cookie 2.x (used by fastify's inject) and sql-template-tag are ESM-only; let swc compile it for jest's CommonJS.
  transformIgnorePatterns: ['/node_modules/(?!(cookie|sql-template-tag)/)'],
  testTimeout: 60_000,
  maxWorkers: 2,
};
