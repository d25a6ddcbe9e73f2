import { readFileSync } from 'node:fs';
import { defineConfig } from 'vitest/config';

// @svc/client publishes dist/; inside the repository each of its entries (package.json `exports`) is read from the
// source its `svc-source` condition names, as the typecheck's customConditions do: the tests run the client's
// current source without a build. Aliases rather than resolve.conditions, which would replace vitest's own list.
const clientExports = JSON.parse(readFileSync(new URL('./client/package.json', import.meta.url), 'utf8'))
  .exports as Record<string, { 'svc-source'?: string }>;
const clientSource = Object.entries(clientExports)
  .filter(([, e]) => typeof e === 'object' && e['svc-source'])
  .map(([sub, e]) => ({
    find: new RegExp(`^@svc/client${sub.slice(1).replace(/[/.]/g, '\\$&')}$`),
    replacement: new URL(`./client/${e['svc-source']}`, import.meta.url).pathname,
  }));

export default defineConfig({
  resolve: { alias: clientSource },
  test: {
    include: [
      'tests/src/**/*.spec.ts',
      'tests/eval/**/*.spec.ts',
      '{contracts,domain,search,command-api,query-api,projectors,deploy}/src/**/*.spec.ts',
    ],
    testTimeout: 90_000,
    // Through the router (E2E_TARGET=router) a suite's beforeAll starts five processes and nginx, not one service.
    hookTimeout: process.env.E2E_TARGET === 'router' ? 240_000 : 60_000,
    pool: 'forks',
    // isolate false: a test process runs file after file with its modules already loaded. Each file imported the
    // service afresh (collection: 415-505 s of CPU in a full run) and compiled PostgreSQL's WASM again (an in-process
    // service start: 4.8 s of CPU first, 1.6-2.1 s after). Suites leave no state behind: each starts its own service
    // on its own data directory, closes what it opens (a model pool left open is found by later files) and restores
    // what it sets in process.env; a suite two spec files run is a function each calls.
    poolOptions: { forks: { maxForks: 2, minForks: 1, isolate: false } },
  },
});
