import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['tests/src/**/*.spec.ts', 'tests/eval/**/*.spec.ts', '{contracts,domain,command-api,query-api,projectors,deploy}/src/**/*.spec.ts'],
    testTimeout: 90_000,
    // Through the router (E2E_TARGET=router) a suite's beforeAll starts five processes and nginx, not one service.
    hookTimeout: process.env.E2E_TARGET === 'router' ? 240_000 : 60_000,
    pool: 'forks',
    poolOptions: { forks: { maxForks: 2, minForks: 1 } },
  },
});
