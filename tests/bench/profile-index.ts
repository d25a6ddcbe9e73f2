/**
 * `tsx tests/bench/profile-index.ts [rate] [seconds]`: write -> INDEXED alone (the searchable bench's part (b)) on a
 * fresh service: TEXT records at `rate` per second (default 200) for `seconds` (default 10) after 2 s of warm-up.
 * Prints the latency figures and the service's CPU per thread, to compare builds without the rest of the section.
 * INDEX_PROFILE=1: the main thread's CPU profile over the writes (cpu-profile-child.mjs), per record;
 * INDEX_SQL_CENSUS=1: the main thread's PGlite time per statement instead.
 */
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from '../src/support/service';
import { tempDir } from '../src/support/engines';
import { printProfileFile, printSqlCensus, threadCpu } from './cpu-profile';
import { startHttpService } from './http';
import { clientOf, createSchema, writeToIndexed } from './searchable';

const rate = Number(process.argv[2] ?? 200);
const seconds = Number(process.argv[3] ?? 10);
const d = tempDir('svc-prof-index-');
const out = join(ROOT, '.cache', 'bench-index.cpuprofile');
rmSync(out, { force: true });
const probe = process.env.INDEX_PROFILE || process.env.INDEX_SQL_CENSUS;
const svc = await startHttpService(d.dir, {
  EDGE_RATE_LIMIT_PER_MINUTE: '0',
  ...(process.env.INDEX_SQL_CENSUS ? { SVC_SQL_CENSUS: '1' } : {}),
  ...(probe
    ? {
        SVC_PROFILE_OUT: out,
        NODE_OPTIONS:
          `${process.env.NODE_OPTIONS ?? ''} --import ${join(import.meta.dirname, 'cpu-profile-child.mjs')}`.trim(),
      }
    : {}),
});
const c = clientOf(svc, 48);
try {
  await createSchema(c, 'TEXT');
  const before = threadCpu(svc.child.pid!);
  if (probe) svc.child.kill('SIGUSR2');
  const r = await writeToIndexed(c, rate, seconds, 2);
  if (probe) svc.child.kill('SIGUSR2');
  const after = threadCpu(svc.child.pid!);
  console.log(
    `write -> INDEXED at ${rate}/s: achieved ${r.achieved.toFixed(0)}/s, ${r.indexed} indexed, ` +
      `${r.failed} failed, ${(r.reads / r.written).toFixed(1)} observer reads per record; p50 ` +
      `${r.p50.toFixed(0)} ms, p99 ${r.p99.toFixed(0)} ms, max ${r.max.toFixed(0)} ms; create p99 ` +
      `${r.createP99.toFixed(1)} ms; cold p99 ${r.cold.p99.toFixed(0)} ms`,
  );
  const rows = [...after]
    .map(([k, v]) => [k, v - (before.get(k) ?? 0)] as const)
    .filter(([k, v]) => v > 50 && k !== 'main-system')
    .sort((a, b) => b[1] - a[1]);
  console.log(
    `service CPU by thread (ms per record): ${rows.map(([k, v]) => `${k} ${(v / r.written).toFixed(2)}`).join(', ')}`,
  );
  if (process.env.INDEX_SQL_CENSUS) {
    await printSqlCensus(svc.output, r.written, 'record');
  } else if (probe) {
    await printProfileFile(out, r.written);
  }
} finally {
  await c.close();
  await svc.stop();
  d.remove();
}
