import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['tests/src/**/*.spec.ts', 'tests/eval/**/*.spec.ts', '{contracts,domain,command-api,query-api,projectors,deploy}/src/**/*.spec.ts'],
    testTimeout: 90_000,
    hookTimeout: 60_000,
    pool: 'forks',
    poolOptions: { forks: { maxForks: 2, minForks: 1 } },
  },
});
