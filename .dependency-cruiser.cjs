/**
 * The package edges (docs/architecture.md, "Packages"): `npm run lint:deps`, run by .ci/run.
 *
 *   contracts <- domain <- search <- projectors <- deploy                     (tests may import anything)
 *                domain <- command-api, query-api <- deploy
 *   search <- deploy
 *   client (generated from /openapi.json; imports no workspace) <- console (the web console, a browser bundle)
 *
 * A workspace imports another only through its one entry point (`@svc/<name>`, its src/index.ts),
 * and only in the direction of the arrows: the two APIs never import the projectors (nor each
 * other, nor search); they reach engines through the ports declared in domain/src/ports, which deploy wires.
 */
const { readFileSync } = require('node:fs');

const PKG = '(contracts|domain|search|command-api|query-api|projectors|deploy|client|console)';
/** The arrows of the architecture: what each workspace may depend on. */
const ARCH = {
  contracts: [],
  domain: ['contracts'],
  /** The search engines the queries read and the indexer that writes them (its feed and checkpoints: domain ports). */
  search: ['contracts', 'domain'],
  'command-api': ['contracts', 'domain'],
  'query-api': ['contracts', 'domain'],
  projectors: ['contracts', 'domain', 'search'],
  deploy: ['contracts', 'domain', 'search', 'command-api', 'query-api', 'projectors'],
  /** The typed client (generated from /openapi.json): a leaf for the service's users, importing no workspace. */
  client: [],
  /** The web console: a browser app calling the service only through the client, as any user's app would. */
  console: ['client'],
};
/** What each workspace's package.json declares; a declaration against the arrows stops the check. */
const declared = Object.fromEntries(
  Object.keys(ARCH).map((w) => {
    const deps = Object.keys(JSON.parse(readFileSync(`${__dirname}/${w}/package.json`, 'utf8')).dependencies ?? {});
    const ws = deps.filter((d) => d.startsWith('@svc/')).map((d) => d.slice('@svc/'.length));
    const against = ws.filter((d) => !ARCH[w].includes(d));
    if (against.length)
      throw new Error(
        `${w}/package.json declares ${against.map((d) => `@svc/${d}`).join(', ')}: against the package ` +
          `edges (.dependency-cruiser.cjs, ARCH)`,
      );
    return [w, ws];
  }),
);
const layer = (w) => ({
  name: `${w}-imports-${declared[w].join('-') || 'no-workspace'}`,
  comment:
    `${w} imports ${declared[w].length ? declared[w].join(', ') : 'no other workspace'} (its declared ` +
    `workspace dependencies) and nothing else`,
  severity: 'error',
  from: { path: `^${w}/src/` },
  to: { path: `^${PKG}/src/`, pathNot: [w, ...declared[w]].map((p) => `^${p}/src/`) },
});

module.exports = {
  forbidden: [
    ...Object.keys(ARCH).map(layer),
    {
      name: 'apis-never-import-projectors-or-search',
      comment:
        'the APIs reach the barrier, checkpoints, feeds and search engines through the ports in domain/src/ports only',
      severity: 'error',
      from: { path: '^(command-api|query-api)/' },
      to: { path: '^(projectors|search)/' },
    },
    {
      name: 'search-engines-never-import-the-indexer',
      comment:
        'search/src/engines (what a query reads) stands apart from search/src/indexer (the write side): the ' +
        'indexer imports the engines it writes, never the other way',
      severity: 'error',
      from: { path: '^search/src/engines/' },
      to: { path: '^search/src/indexer/' },
    },
    {
      name: 'client-main-entry-has-no-node-builtin',
      comment:
        "the client's main entry is bundled for browsers: Node built-ins only in client/src/node.ts (the " +
        '@svc/client/node entry)',
      severity: 'error',
      from: { path: '^client/src/', pathNot: ['^client/src/node\\.ts$', '\\.spec\\.ts$'] },
      to: { dependencyTypes: ['core'] },
    },
    {
      name: 'console-has-no-node-builtin',
      comment:
        'the console runs in the browser: no Node built-in anywhere in it (so the client it bundles has none either)',
      severity: 'error',
      from: { path: '^console/src/' },
      to: { dependencyTypes: ['core'] },
    },
    {
      name: 'no-import-of-tests',
      comment: 'nothing but the tests imports the tests',
      severity: 'error',
      from: { path: `^${PKG}/` },
      to: { path: '^tests/' },
    },
    {
      name: 'no-runtime-import-loop',
      comment:
        'modules never import each other in a loop at run time (type-only imports aside): a service is ' +
        'not imported from a route file',
      severity: 'error',
      from: { path: `^${PKG}/src/` },
      to: { circular: true, dependencyTypesNot: ['type-only'], viaOnly: { dependencyTypesNot: ['type-only'] } },
    },
    {
      name: 'deciders-never-import-the-write-path',
      comment:
        'the deciders stay pure (command, state -> events): only the ports and the entry point see ' +
        'domain/src/write, the one command handler that loads, appends and retries',
      severity: 'error',
      from: { path: '^domain/src/', pathNot: ['^domain/src/(write|ports)/', '^domain/src/index\\.ts$'] },
      to: { path: '^domain/src/write/' },
    },
    {
      name: 'test-support-only-in-specs',
      comment:
        'a *.test-support.ts file (the given/when/then helper, which uses node:assert) is left out of the ' +
        'build: only specs import it',
      severity: 'error',
      from: { path: `^${PKG}/src/`, pathNot: ['\\.spec\\.ts$', '\\.test-support\\.ts$'] },
      to: { path: '\\.test-support\\.ts$' },
    },
    {
      name: 'no-import-loop',
      comment:
        'no import loop at all, type-only imports included (issue 45: the command handler and the meter ' +
        'imported each other, one side type-only, and the run-time rule above did not see it)',
      severity: 'error',
      from: { path: `^${PKG}/src/` },
      to: { circular: true },
    },
    {
      name: 'no-deep-package-import',
      comment: 'a workspace exports one entry point: @svc/<name>/<path> does not resolve',
      severity: 'error',
      from: {},
      to: { couldNotResolve: true, path: '^@svc/' },
    },
    {
      name: 'entry-point-only',
      comment:
        'another workspace is imported through its entry point (@svc/<name>, src/index.ts), never a file inside it',
      severity: 'error',
      from: { path: `^${PKG}/src/` },
      to: { path: `^${PKG}/src/(?!index\\.ts$)`, pathNot: '^$1/src/' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '(^|/)(node_modules|dist)/' },
    tsConfig: { fileName: 'tsconfig.json' },
    tsPreCompilationDeps: true,
    combinedDependencies: false,
    enhancedResolveOptions: {
      exportsFields: ['exports'],
      conditionNames: ['svc-source', 'import', 'default'],
      extensions: ['.ts', '.tsx', '.mjs', '.js', '.d.ts'],
      mainFields: ['module', 'main', 'types'],
    },
    reporterOptions: { text: { highlightFocused: true } },
  },
};
