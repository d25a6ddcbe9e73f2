/**
 * GET /metrics (prom-client): after traffic it shows the HTTP histogram and counter per route template, method and
 * status, the open event streams, Node's event-loop lag, GC and heap, and the log's gauges; the text passes
 * `promtool check metrics` (Debian's prometheus package; skipped with the reason when it is not installed) apart
 * from prom-client's own three `nodejs_active_*_total` gauges, which promtool's naming lint flags; and no label
 * carries an id, a tenant or a credential.
 */
import { spawnSync } from 'node:child_process';
import { get, type IncomingMessage } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startService, type TestService } from '../support/service';

const PROMTOOL = spawnSync('sh', ['-c', 'command -v promtool'], { encoding: 'utf8' }).stdout.trim();
/** promtool's lint of prom-client's default collectors (gauges whose names end in _total): not ours to rename. */
const PROM_CLIENT_LINT =
  /^nodejs_active_(handles|requests|resources)_total non-counter metrics should not have "_total" suffix$/;

/** The value of the sample whose name is `name` and whose labels include every one of `labels`. */
function sample(text: string, name: string, labels: Record<string, string>): number | undefined {
  for (const line of text.split('\n')) {
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const have = Object.fromEntries(
      [...(m[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)].map((x) => [x[1], x[2]]),
    );
    if (Object.entries(labels).every(([k, v]) => have[k] === v)) return Number(m[3]);
  }
  return undefined;
}

describe('GET /metrics', () => {
  let svc: TestService;
  let root: string;
  const metrics = async () => {
    const r = await fetch(`${svc.url}/metrics`);
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
    return r.text();
  };

  beforeAll(async () => {
    svc = await startService();
    root = svc.bootstrap.tenants.test.rootKey;
  });
  afterAll(async () => {
    await svc?.stop();
  });

  it('counts each answer under its route template, method and status, with a latency histogram', async () => {
    const typeName = `Metric${Date.now()}`;
    expect(
      (
        await svc.api.post('/v1/schemas', root, {
          typeName,
          displayName: 'Metrics',
          allowedSurfaces: ['record'],
          fields: [{ fieldId: 'name', fieldType: 'string' }],
        })
      ).status,
    ).toBe(201);
    const created = await svc.api.post('/v1/records', root, { typeName, payload: { name: 'a' } });
    expect(created.status).toBe(201);
    for (let i = 0; i < 3; i++) expect((await svc.api.get(`/v1/records/${created.body.id}`, root)).status).toBe(200);
    expect((await svc.api.get('/v1/records/00000000-0000-4000-8000-000000000000', root)).status).toBe(404);
    expect((await svc.api.get(`/v1/records/${created.body.id}`, 'not-a-key')).status).toBe(401);
    expect((await fetch(`${svc.url}/v1/no-such-route`, { headers: { authorization: `Bearer ${root}` } })).status).toBe(
      404,
    );

    const text = await metrics();
    const get = { method: 'GET', route: '/v1/records/:id', role: 'all' };
    expect(sample(text, 'svc_http_requests_total', { ...get, status_code: '200' })).toBe(3);
    expect(sample(text, 'svc_http_requests_total', { ...get, status_code: '404' })).toBe(1);
    expect(sample(text, 'svc_http_requests_total', { ...get, status_code: '401' })).toBe(1);
    expect(sample(text, 'svc_http_requests_total', { method: 'POST', route: '/v1/records', status_code: '201' })).toBe(
      1,
    );
    // A path no route matched is one label, not the path (bounded).
    expect(
      sample(text, 'svc_http_requests_total', { method: 'GET', route: 'unmatched', status_code: '404' }),
    ).toBeGreaterThanOrEqual(1);
    expect(text).not.toContain('/v1/no-such-route');
    expect(sample(text, 'svc_http_request_duration_seconds_count', { ...get, status_code: '200' })).toBe(3);
    expect(sample(text, 'svc_http_request_duration_seconds_bucket', { ...get, status_code: '200', le: '+Inf' })).toBe(
      3,
    );
    expect(sample(text, 'svc_http_request_duration_seconds_sum', { ...get, status_code: '200' })).toBeGreaterThan(0);
    // No id, tenant or key in any label.
    expect(text).not.toContain(created.body.id);
    expect(text).not.toContain(root);
    expect(text).not.toContain(svc.bootstrap.tenants.test.tenantId);
  });

  it("shows Node's event-loop lag, GC and heap, and the log's head and subscribers", async () => {
    (globalThis as { gc?: () => void }).gc?.();
    const text = await metrics();
    for (const name of [
      'nodejs_eventloop_lag_p99_seconds',
      'nodejs_heap_size_used_bytes',
      'process_resident_memory_bytes',
    ])
      expect(sample(text, name, { role: 'all' }), name).toBeGreaterThan(0);
    expect(text).toMatch(/^# TYPE nodejs_gc_duration_seconds histogram$/m);
    expect(sample(text, 'svc_event_store_head_position', { role: 'all' })).toBeGreaterThan(0);
    expect(
      sample(text, 'svc_subscriber_lag_events', { role: 'all', subscriber: 'read-models' }),
    ).toBeGreaterThanOrEqual(0);
  });

  it('counts an open event stream while it is open', async () => {
    const before = sample(await metrics(), 'svc_sse_streams_open', { route: '/v1/changes' }) ?? 0;
    // A socket closed by the client, as a browser closing its EventSource does.
    const req = get(`${svc.url}/v1/changes`, { headers: { authorization: `Bearer ${root}` } });
    const res = await new Promise<IncomingMessage>((resolve, reject) =>
      req.on('response', resolve).on('error', reject),
    );
    expect(res.statusCode).toBe(200);
    expect(sample(await metrics(), 'svc_sse_streams_open', { route: '/v1/changes' })).toBe(before + 1);
    req.destroy();
    await expect
      .poll(async () => sample(await metrics(), 'svc_sse_streams_open', { route: '/v1/changes' }), { timeout: 5_000 })
      .toBe(before);
  });

  it.skipIf(!PROMTOOL)(
    `passes promtool check ` +
      `metrics${PROMTOOL ? '' : ' (skipped: promtool is not installed: apt-get install prometheus)'}`,
    async () => {
      const r = spawnSync(PROMTOOL, ['check', 'metrics'], { input: await metrics(), encoding: 'utf8' });
      // Exit 1 is a text promtool cannot parse; 3 is lint findings, each listed on stderr.
      expect(r.status, r.stderr).not.toBe(1);
      const findings = `${r.stdout}${r.stderr}`.split('\n').filter(Boolean);
      expect(
        findings.filter((l) => !PROM_CLIENT_LINT.test(l)),
        findings.join('\n'),
      ).toEqual([]);
    },
  );
});
