#!/usr/bin/env node
// `npm test`: runs every suite with vitest. Suites for server engines run when
// their URL variable is set; this prints which are skipped and why, and ends
// with one plain summary line ("Tests: N passed, N failed, N skipped").
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, existsSync, rmSync, writeFileSync } from 'node:fs';
import { join, dirname, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const engines = [
  ['DATABASE_URL', 'PostgreSQL server', 'event-store contract, read models and the whole service on PostgreSQL'],
  [
    'EVENTSTORE_URL',
    'EventStoreDB / KurrentDB',
    'event-store contract on KurrentDB (no server can be installed on our build machines)',
  ],
  ['KAFKA_BROKERS', 'Apache Kafka', 'Kafka relay, Kafka feed, split-role (4 processes) and Kafka fault'],
  [
    'ELASTICSEARCH_URL',
    'Elasticsearch',
    'text-index contract, PostgreSQL-parity, search e2e and search-index rebuild on Elasticsearch',
  ],
  ['REDIS_URL', 'Redis', 'rate-limit counter contract on Redis'],
];
console.log('Server engine suites:');
for (const [env, name, what] of engines) {
  if (process.env[env]) console.log(`  RUN   ${name} (${env} is set): ${what}`);
  else console.log(`  SKIP  ${name}: ${env} is not set, so the ${what} suite is skipped`);
}
// The fail-open test stops and restarts a Redis of its own: it needs the redis-server binary, not REDIS_URL.
if (spawnSync('sh', ['-c', 'command -v redis-server'], { encoding: 'utf8' }).stdout.trim())
  console.log('  RUN   Redis stopped mid-service (redis-server is installed): rate-limit fail-open and recovery');
else
  console.log(
    '  SKIP  Redis stopped mid-service: redis-server is not installed, so the rate-limit ' +
      'fail-open-and-recovery test is skipped',
  );
// The split deployment's suites (topology, faults, replica caches) run the shipped router in nginx.
const nginx = ['/usr/sbin/nginx', '/usr/bin/nginx'].find((p) => existsSync(p));
if (nginx)
  console.log(
    `  RUN   nginx (${nginx}): the split deployment behind the shipped router (deploy/k8s/router.nginx.conf)`,
  );
else
  console.log(
    '  SKIP  nginx is not installed, so the split-deployment suites (which run the shipped router) cannot ' +
      'start: apt-get install nginx-light',
  );
// The browser suites (CORS from another origin, the API page, the example page) drive Debian's chromium.
const chromium =
  process.env.CHROMIUM_PATH ?? ['/usr/bin/chromium', '/usr/bin/chromium-browser'].find((p) => existsSync(p));
if (chromium)
  console.log(
    `  RUN   chromium (${chromium}): the browser suites (a page from another origin, the API page, the example page)`,
  );
else
  console.log(
    '  SKIP  chromium is not installed, so the browser suites are skipped: apt-get install chromium (or ' +
      'set CHROMIUM_PATH)',
  );
if (spawnSync('sh', ['-c', 'command -v promtool'], { encoding: 'utf8' }).stdout.trim())
  console.log('  RUN   promtool: /metrics checked by promtool check metrics');
else
  console.log(
    '  SKIP  promtool is not installed, so the /metrics text is not checked by it: apt-get install prometheus',
  );
const throughRouter = process.env.E2E_TARGET === 'router';
if (throughRouter)
  console.log('  MODE  E2E_TARGET=router: each black-box suite runs on the split deployment behind the shipped router');
console.log('Embedded engines (PGlite, in-process catch-up) always run.\n');

mkdirSync(join(root, '.cache'), { recursive: true });
const out = join(root, '.cache', throughRouter ? 'vitest-results-router.json' : 'vitest-results.json');
const progress = join(root, '.cache', throughRouter ? 'vitest-files-router.jsonl' : 'vitest-files.jsonl');
rmSync(out, { force: true });
rmSync(progress, { force: true });
const env = { ...process.env, VITEST_FILE_RESULTS: progress };
const vitest = (extra, json) =>
  spawnSync(
    'npx',
    [
      'vitest',
      'run',
      '--reporter=default',
      '--reporter=json',
      `--outputFile.json=${json}`,
      '--reporter=./tests/file-results-reporter.mjs',
      ...extra,
    ],
    { cwd: root, stdio: 'inherit', env },
  );
let r = vitest(process.argv.slice(2), out);
let rerun = [];
if (!existsSync(out)) {
  // The run was cut short: a test process died (a V8 fatal error in a worker ends vitest's whole run, and its JSON
  // report is never written; seen with PGlite's WebAssembly under heavy instance churn, nodejs/node#64500). The files
  // that did not finish run again, at most twice; a file that never finishes is counted as one failed test.
  const finished = () => new Set(readLines(progress).map((l) => l.file));
  const list = join(root, '.cache', 'vitest-files-list.json');
  spawnSync('npx', ['vitest', 'list', '--filesOnly', `--json=${list}`, ...process.argv.slice(2)], {
    cwd: root,
    stdio: 'ignore',
    env: process.env,
  });
  const all = JSON.parse(readFileSync(list, 'utf8')).map((f) => f.file);
  for (let attempt = 1; attempt <= 2; attempt++) {
    const done = finished();
    const missing = all.filter((f) => !done.has(f));
    if (!missing.length) break;
    console.log(
      `\nA test process died before its files finished: running the ${missing.length} unfinished files ` +
        `again (attempt ${attempt} of 2):\n  ${missing.map((f) => relative(root, f)).join('\n  ')}\n`,
    );
    rerun.push(...missing);
    r = vitest(missing, join(root, '.cache', 'vitest-rerun.json'));
  }
  const results = readLines(progress);
  const done = new Set(results.map((l) => l.file));
  const lost = all.filter((f) => !done.has(f));
  const testResults = [
    ...results.map((l) => ({
      name: l.file,
      assertionResults: l.tests.map((t) => ({ fullName: t.fullName, status: t.status })),
    })),
    ...lost.map((f) => ({
      name: f,
      assertionResults: [{ fullName: 'the test process died before this file finished', status: 'failed' }],
    })),
  ];
  const count = (s) => testResults.reduce((n, f) => n + f.assertionResults.filter((t) => t.status === s).length, 0);
  writeFileSync(
    out,
    JSON.stringify({
      numPassedTests: count('passed'),
      numFailedTests: count('failed'),
      numPendingTests: count('skipped') + count('pending'),
      numTodoTests: 0,
      rerunFiles: [...new Set(rerun)].map((f) => relative(root, f)),
      testResults,
    }),
  );
  r = { status: count('failed') ? 1 : 0 };
}
if (existsSync(out)) {
  const j = JSON.parse(readFileSync(out, 'utf8'));
  const skipped = (j.numPendingTests ?? 0) + (j.numTodoTests ?? 0);
  const again = j.rerunFiles?.length ? ` (${j.rerunFiles.length} files run again after a test process died)` : '';
  // A file that failed with no failed test (an error while loading it, or in a hook outside every test) counts as
  // one failed test, named: the count of tests alone would say 0 failed.
  const broken = (j.testResults ?? []).filter(
    (f) => f.status === 'failed' && !(f.assertionResults ?? []).some((t) => t.status === 'failed'),
  );
  for (const f of broken) {
    const why = (f.message || 'a hook failed outside its tests (see above)').split('\n')[0];
    console.log(`failed file: ${relative(root, f.name)}: ${why}`);
  }
  console.log(
    `\n${throughRouter ? 'Through the router' : 'Tests'}: ${j.numPassedTests} passed, ` +
      `${j.numFailedTests + broken.length} failed, ${skipped} skipped${again}`,
  );
}
process.exit(r.status ?? 1);

function readLines(file) {
  return existsSync(file)
    ? readFileSync(file, 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l))
    : [];
}
