/**
 * `npx tsx tests/eval/ingest-probe.ts --url <base URL> --key <root key> [--rate 5] [--until-file F] [--max-min 30]
 * [--index-mode HYBRID|TEXT]`
 *
 * The HTTP path while a bulk ingest indexes (issue 16): creates one small HYBRID record every 1/rate s
 * through POST /v1/records (a schema of its own, created first), from this separate process (client-side
 * wall time), until F exists or --max-min passes, and prints create latency p50 / p95 / p99 / max per
 * minute and overall, with the service's vector queue (`/readyz` → search-index `vectorJobs`) beside it.
 * Run it beside `npm run eval:search -- --data-dir D` (its service prints its URL; the key is in
 * D/eval-search-state.json) to measure create latency during the SciFact ingest. Its records go to a context
 * it creates (POST /v1/contexts), so they never enter the evaluated context's statistics or results.
 */
import { existsSync } from 'node:fs';
import { parseArgs } from 'node:util';

const { values: a } = parseArgs({
  options: {
    url: { type: 'string' },
    key: { type: 'string' },
    rate: { type: 'string', default: '5' },
    'until-file': { type: 'string' },
    'max-min': { type: 'string', default: '30' },
    'index-mode': { type: 'string', default: 'HYBRID' },
  },
});
if (!a.url || !a.key) throw new Error('--url and --key are required');
const base = a.url.replace(/\/+$/, '');
const headers: Record<string, string> = { authorization: `Bearer ${a.key}`, 'content-type': 'application/json' };
const post = async (path: string, body: unknown) => {
  const t0 = performance.now();
  const r = await fetch(`${base}${path}`, { method: 'POST', headers, body: JSON.stringify(body) });
  const text = await r.text();
  return { status: r.status, ms: performance.now() - t0, text };
};
const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((x, y) => x - y);
  return s.length ? s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)] : NaN;
};
const fmt = (xs: number[]) =>
  `n ${xs.length}, p50 ${pct(xs, 50).toFixed(0)} ms, p95 ${pct(xs, 95).toFixed(0)} ms, p99 ` +
  `${pct(xs, 99).toFixed(0)} ms, max ${Math.max(...xs).toFixed(0)} ms`;

const typeName = `Probe_${Date.now().toString(36)}`;
const ctx = await post('/v1/contexts', { name: `ingest probe ${typeName}` });
if (ctx.status !== 201) throw new Error(`context: ${ctx.status} ${ctx.text.slice(0, 200)}`);
headers['x-context-id'] = (JSON.parse(ctx.text) as { contextId: string }).contextId;
const s = await post('/v1/schemas', {
  typeName,
  displayName: 'Probe',
  allowedSurfaces: ['record'],
  fields: [
    { fieldId: 'title', fieldType: 'string', searchable: true },
    { fieldId: 'body', fieldType: 'string', searchable: true },
  ],
});
if (s.status !== 201) throw new Error(`schema: ${s.status} ${s.text.slice(0, 200)}`);
const all: number[] = [];
let minute: number[] = [];
const t0 = Date.now();
const gap = 1000 / Number(a.rate);
const errors: Record<string, number> = {};
let n = 0;
const jobs = async () => {
  try {
    const r = await fetch(`${base}/readyz`);
    const b = (await r.json()) as { projections?: Array<{ name: string; vectorJobs?: number }> };
    return b.projections?.find((p) => p.name === 'search-index')?.vectorJobs ?? '?';
  } catch {
    return '?';
  }
};
const inflight: Array<Promise<void>> = [];
while (!(a['until-file'] && existsSync(a['until-file'])) && Date.now() - t0 < Number(a['max-min']) * 60_000) {
  const next = t0 + ++n * gap;
  inflight.push(
    post('/v1/records', {
      typeName,
      payload: { title: `probe ${n}`, body: 'A small record written while a bulk ingest is indexed.' },
      indexMode: a['index-mode'] ?? 'HYBRID',
    }).then((r) => {
      if (r.status !== 201) errors[r.status] = (errors[r.status] ?? 0) + 1;
      else {
        all.push(r.ms);
        minute.push(r.ms);
      }
    }),
  );
  if (minute.length >= 60 * Number(a.rate)) {
    console.log(`${new Date().toISOString()} create: ${fmt(minute)}; vector jobs queued: ${await jobs()}`);
    minute = [];
  }
  await new Promise((r) => setTimeout(r, Math.max(0, next - Date.now())));
}
await Promise.all(inflight);
console.log(`overall create latency: ${fmt(all)}; errors ${JSON.stringify(errors)}`);
