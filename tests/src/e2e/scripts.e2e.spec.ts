import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ServiceError } from '@svc/contracts';
import type { SandboxPool } from '@svc/command-api';
import { serverUrl } from '../support/engines';
import { inProcessOnly, startService, THROUGH_ROUTER, type Api, type TestService } from '../support/service';

/**
 * Stored scripts and synchronous execution (docs/scripts.md; spec "Scripts",
 * decisions §4, §7): versions, source visibility, execution as one atomic
 * transaction over the host API, budgets, idempotency. The wall clock is
 * lowered to 1.5 s (SCRIPT_TIMEOUT_MS) to keep the hostile suite fast.
 */
let svc: TestService;
let api: Api;
let root: string;

const uniq = (p: string) => `${p}-${randomUUID().slice(0, 8)}`;

async function mint(allowedActions: string[], extra: Record<string, unknown> = {}): Promise<string> {
  const r = await api.post('/v1/tokens', root, { scope: { allowedActions }, ...extra });
  expect(r.status, r.text).toBe(201);
  return r.body.token;
}

async function push(name: string, source: string, token = root, extra: Record<string, unknown> = {}) {
  const r = await api.post('/v1/scripts', token, { name, source, ...extra });
  expect(r.status, r.text).toBe(201);
  return r.body as {
    id: string;
    name: string;
    version: number;
    sourceBytes: number;
    createdAt: string;
    source?: string;
  };
}

const exec = (
  name: string,
  input?: unknown,
  token = root,
  headers?: Record<string, string>,
  version: string | number = 'latest',
) =>
  api.post(
    '/v1/scripts/execute',
    token,
    { scriptRef: { name, version }, ...(input !== undefined ? { input } : {}) },
    headers,
  );

async function schema() {
  const r = await api.post('/v1/schemas', root, {
    typeName: uniq('S'),
    displayName: 'Scripts test',
    allowedSurfaces: ['record'],
  });
  expect(r.status, r.text).toBe(201);
  return r.body as { id: string; typeName: string };
}

async function record(typeName: string, payload: Record<string, unknown>) {
  const r = await api.post('/v1/records', root, { typeName, payload });
  expect(r.status, r.text).toBe(201);
  return r.body as { id: string; version: number; payload: Record<string, unknown> };
}

/** The whole suite, on the embedded engines or (DATABASE_URL) on a PostgreSQL server. */
// Through the router every host call of a script is a PostgreSQL round trip from the command process: 1,000 of
// them took over 4 s on a busy two-core machine (1,000 host calls, 101 record writes).
const SCRIPT_TIMEOUT_MS = THROUGH_ROUTER ? 8000 : 1500;

function scriptsSuite(engine: 'embedded' | 'postgres') {
  beforeAll(async () => {
    svc = await startService({ engine, env: { SCRIPT_TIMEOUT_MS: String(SCRIPT_TIMEOUT_MS) } });
    api = svc.api;
    root = svc.bootstrap.tenants.live.rootKey;
  });

  afterAll(async () => {
    await svc?.stop();
  });

  describe('versions', () => {
    it('counts versions per name from 1, lists them newest first, shows the source only with scripts:r', async () => {
      const name = uniq('v');
      const v1 = await push(name, 'export default () => 1', root, { description: 'first' });
      const v2 = await push(name, 'export default () => 2');
      expect(v1).toMatchObject({
        name,
        version: 1,
        sourceBytes: 22,
        declaredInputContract: null,
        source: 'export default () => 1',
      });
      expect(v2.version).toBe(2);
      expect(v2.id).not.toBe(v1.id);
      const list = await api.get(`/v1/scripts?name=${name}`, root);
      expect(list.status, list.text).toBe(200);
      expect(list.body.data.map((v: any) => v.version)).toEqual([2, 1]);
      expect(list.body.nextCursor).toBeNull();
      const page = await api.get(`/v1/scripts?name=${name}&limit=1`, root);
      expect(page.body.data.map((v: any) => v.version)).toEqual([2]);
      const next = await api.get(
        `/v1/scripts?name=${name}&limit=1&startFrom=${encodeURIComponent(page.body.nextCursor)}`,
        root,
      );
      expect(next.body.data.map((v: any) => v.version)).toEqual([1]);

      const runner = await mint([`scripts:x:${name}`]);
      const got = await api.get(`/v1/scripts/${v1.id}`, runner);
      expect(got.status, got.text).toBe(200);
      expect(got.body.source).toBeUndefined();
      expect(got.body.version).toBe(1);
      const reader = await mint(['scripts:r']);
      expect((await api.get(`/v1/scripts/${v1.id}`, reader)).body.source).toBe('export default () => 1');
      // No script permission at all: the uniform 403; another name's runner does not see this one.
      const stranger = await mint(['records:r']);
      expect((await api.get(`/v1/scripts/${v1.id}`, stranger)).status).toBe(403);
      expect((await api.get(`/v1/scripts?name=${name}`, stranger)).status).toBe(403);
      const otherRunner = await mint(['scripts:x:someone-else']);
      expect((await api.get(`/v1/scripts/${v1.id}`, otherRunner)).status).toBe(404);
      expect((await api.get(`/v1/scripts?name=${name}`, otherRunner)).body.data).toEqual([]);

      expect((await api.del(`/v1/scripts/${v1.id}`, root)).status).toBe(204);
      expect((await api.get(`/v1/scripts/${v1.id}`, root)).status).toBe(404);
      expect((await api.del(`/v1/scripts/${v1.id}`, root)).status).toBe(404);
      const v3 = await push(name, 'export default () => 3');
      expect(v3.version).toBe(3); // a deleted version's number is not reused
      expect((await exec(name, undefined, root, undefined, 1)).status).toBe(404);
      expect((await exec(name, undefined, root, undefined, '2')).body.result).toBe(2);
    });

    it(
      'GET /v1/scripts without name lists the newest live version of each name in the context, by name, ' +
        'paged, with the same permission rules',
      async () => {
        const ctx = await api.post('/v1/contexts', root, { name: uniq('scripts-list') });
        expect(ctx.status, ctx.text).toBe(201);
        const h = { 'x-context-id': ctx.body.id as string };
        const pushIn = async (name: string, source: string) => {
          const r = await api.post('/v1/scripts', root, { name, source }, h);
          expect(r.status, r.text).toBe(201);
          return r.body as { id: string; version: number };
        };
        await pushIn('gamma', 'export default () => "g"');
        await pushIn('alpha', 'export default () => 1');
        await pushIn('alpha', 'export default () => 2');
        await pushIn('beta', 'export default () => "b"');
        const d = await pushIn('delta', 'export default () => "d"');
        // no live version: not listed
        expect((await api.call('DELETE', `/v1/scripts/${d.id}`, { token: root, headers: h })).status).toBe(204);
        const all = await api.get('/v1/scripts', root, h);
        expect(all.status, all.text).toBe(200);
        expect(all.body.data.map((v: any) => [v.name, v.version])).toEqual([
          ['alpha', 2],
          ['beta', 1],
          ['gamma', 1],
        ]);
        expect(all.body.data[0]).toMatchObject({ name: 'alpha', version: 2, source: 'export default () => 2' });
        expect(all.body.nextCursor).toBeNull();
        // the list envelope, paged by the pagination helper; a cursor of another list does not fit
        const p1 = await api.get('/v1/scripts?limit=2', root, h);
        expect(p1.body.data.map((v: any) => v.name)).toEqual(['alpha', 'beta']);
        const p2 = await api.get(`/v1/scripts?limit=2&startFrom=${encodeURIComponent(p1.body.nextCursor)}`, root, h);
        expect(p2.body).toMatchObject({ data: [{ name: 'gamma' }], nextCursor: null });
        const named = await api.get('/v1/scripts?name=alpha&limit=1', root, h);
        expect(
          (await api.get(`/v1/scripts?limit=1&startFrom=${encodeURIComponent(named.body.nextCursor)}`, root, h)).status,
        ).toBe(400);
        // the same permission rules as by name: a runner sees its names without source, no script permission is 403
        const runner = await mint(['scripts:x:beta'], { contextId: ctx.body.id });
        const seen = await api.get('/v1/scripts', runner);
        expect(seen.status, seen.text).toBe(200);
        expect(seen.body.data.map((v: any) => v.name)).toEqual(['beta']);
        expect(seen.body.data[0].source).toBeUndefined();
        const creator = await mint(['scripts:c'], { contextId: ctx.body.id });
        expect((await api.get('/v1/scripts', creator)).body.data.map((v: any) => v.name)).toEqual([
          'alpha',
          'beta',
          'gamma',
        ]);
        expect((await api.get('/v1/scripts', creator)).body.data[0].source).toBeUndefined();
        expect((await api.get('/v1/scripts', await mint(['records:r'], { contextId: ctx.body.id }))).status).toBe(403);
        // another context's names are not there
        const other = await api.get('/v1/scripts?limit=100', root);
        expect(other.status, other.text).toBe(200);
        expect(other.body.data.map((v: any) => v.name)).not.toContain('alpha');
      },
    );

    it(
      'refuses a source over 256 KB (413), a syntax error and a module without export default (400), and ' +
        'needs scripts:c',
      async () => {
        const big = await api.post('/v1/scripts', root, {
          name: uniq('big'),
          source: `export default () => 1;\n//${'x'.repeat(256 * 1024)}`,
        });
        expect(big.status, big.text).toBe(413);
        expect(big.body.errorCode).toBe('PAYLOAD_TOO_LARGE');
        const bad = await api.post('/v1/scripts', root, { name: uniq('bad'), source: 'export default () => {' });
        expect(bad.status).toBe(400);
        expect(bad.body.message).toMatch(/compile/);
        expect(
          (await api.post('/v1/scripts', root, { name: uniq('nodef'), source: 'export const x = 1' })).status,
        ).toBe(400);
        const reader = await mint(['scripts:r']);
        expect(
          (await api.post('/v1/scripts', reader, { name: uniq('x'), source: 'export default () => 1' })).status,
        ).toBe(403);
      },
    );
  });

  describe('unknown fields', () => {
    it('a push or an execute with a field the API does not take is a 400 that stores and runs nothing', async () => {
      const name = uniq('strict');
      const push = await api.post('/v1/scripts', root, { name, source: 'export default () => 1', extra: 1 });
      expect(push.status, push.text).toBe(400);
      expect(push.body.errorCode).toBe('VALIDATION_ERROR');
      expect((await api.get(`/v1/scripts?name=${name}`, root)).body.data).toEqual([]);
      expect((await api.post('/v1/scripts', root, { name, source: 'export default () => 1' })).status).toBe(201);
      for (const body of [{ scriptRef: { name }, inputs: {} }, { scriptRef: { name, versoin: 1 } }]) {
        const r = await api.post('/v1/scripts/execute', root, body);
        expect(r.status, JSON.stringify(body)).toBe(400);
        expect(r.body.errorCode).toBe('VALIDATION_ERROR');
      }
    });
  });

  describe('execution', () => {
    it('runs with the spec input, reads and writes through the host API, and commits the writes', async () => {
      const s = await schema();
      const rec = await record(s.typeName, { n: 1 });
      const name = uniq('rw');
      await push(
        name,
        `export default async (input) => {
          const r = await ` +
          `records.get(input.params.id);
          const created = await records.create({ typeName: ` +
          `r.typeName, payload: { n: r.payload.n + 1 } });
          await records.patch(r.id, { payload: { ` +
          `n: 10 } });
          const again = await records.get(r.id);          // the script's own staged ` +
          `write
          const fresh = await records.get(created.id);    // and its own staged ` +
          `create
          return { event: input.event, userId: input.userId, n: again.payload.n, created: ` +
          `fresh.id, missing: await records.get('nope') };
        }`,
      );
      const r = await exec(name, { id: rec.id });
      expect(r.status, r.text).toBe(200);
      expect(r.body.result).toMatchObject({ event: 'execute', userId: null, n: 10, missing: null });
      expect(r.body.execution.id).toEqual(expect.any(String));
      expect(r.body.execution.durationMs).toEqual(expect.any(Number));
      expect((await api.get(`/v1/records/${rec.id}`, root)).body.payload.n).toBe(10);
      expect((await api.get(`/v1/records/${r.body.result.created}`, root)).body.payload.n).toBe(2);
    });

    it('a write the script did not await is part of its transaction', async () => {
      const s = await schema();
      const rec = await record(s.typeName, { n: 1 });
      const name = uniq('noawait');
      await push(
        name,
        `export default (input) => { records.patch(input.params.id, { payload: { n: 5 } }); return 'returned first' }`,
      );
      const r = await exec(name, { id: rec.id });
      expect(r.status, r.text).toBe(200);
      expect(r.body.result).toBe('returned first');
      expect((await api.get(`/v1/records/${rec.id}`, root)).body.payload.n).toBe(5);
    });

    it('a throw is SCRIPT_ERROR with the message and commits nothing', async () => {
      const s = await schema();
      const rec = await record(s.typeName, { n: 1 });
      const name = uniq('throw');
      await push(
        name,
        `export default async (input) => { await records.patch(input.params.id, { payload: { n: 99 } }); ` +
          `throw new Error('nope: ' + input.params.id) }`,
      );
      const r = await exec(name, { id: rec.id });
      expect(r.status, r.text).toBe(400);
      expect(r.body).toMatchObject({ errorCode: 'SCRIPT_ERROR', message: `nope: ${rec.id}` });
      expect((await api.get(`/v1/records/${rec.id}`, root)).body.payload.n).toBe(1);
    });

    it('over 100 storage rows is WRITE_BUFFER_CAP_EXCEEDED with total and limit, nothing committed', async () => {
      const s = await schema();
      const name = uniq('cap');
      await push(
        name,
        `export default async (input) => { for (let i = 0; i < 101; i++) await records.create({ typeName: ` +
          `input.params.t, payload: { i } }); return 1 }`,
      );
      const r = await exec(name, { t: s.typeName });
      expect(r.status, r.text).toBe(400);
      expect(r.body).toMatchObject({ errorCode: 'WRITE_BUFFER_CAP_EXCEEDED', total: 101, limit: 100 });
      const list = await api.get(`/v1/records?type=${s.typeName}`, root);
      expect(list.body.data).toEqual([]);
    });

    it(
      'checks every host call against the credential: a refusal is AUTHORIZATION_DENIED, and scripts:x ' +
        'grants no data access',
      async () => {
        const s = await schema();
        const rec = await record(s.typeName, { n: 1 });
        const name = uniq('deny');
        await push(
          name,
          `export default async (input) => { try { await records.delete(input.params.id) } catch (e) { if ` +
            `(input.params.rethrow) throw e; return e.code } }`,
        );
        const token = await mint([`scripts:x:${name}`, 'records:r']);
        const caught = await exec(name, { id: rec.id }, token);
        expect(caught.status, caught.text).toBe(200);
        expect(caught.body.result).toBe('AUTHORIZATION_DENIED');
        const escaped = await exec(name, { id: rec.id, rethrow: true }, token);
        expect(escaped.status, escaped.text).toBe(403);
        expect(escaped.body.errorCode).toBe('AUTHORIZATION_DENIED');
        expect((await api.get(`/v1/records/${rec.id}`, root)).status).toBe(200);
        // Without scripts:x (or scripts:x:<name>) the execution itself is refused.
        const other = await mint(['scripts:x:another', 'records:r']);
        expect((await exec(name, { id: rec.id }, other)).status).toBe(403);
      },
    );

    it('without any scripts:x permission the uniform 403 comes first, before the body is validated', async () => {
      const none = await mint(['records:r', 'scripts:r']);
      for (const body of [
        {},
        { scriptRef: { name: 'no such name!' } },
        { scriptRef: { name: uniq('x'), version: 'latest' } },
      ]) {
        const r = await api.post('/v1/scripts/execute', none, body);
        expect(r.status, `${JSON.stringify(body)}: ${r.text}`).toBe(403);
        expect(r.body.errorCode).toBe('FORBIDDEN');
        expect(r.body.message).not.toMatch(/scripts:x/);
      }
      // Holding scripts:x for some name passes that check: a bad body is then a 400, another name the 403.
      const other = await mint(['scripts:x:another']);
      expect((await api.post('/v1/scripts/execute', other, {})).status).toBe(400);
      expect((await exec(uniq('x'), undefined, other)).status).toBe(403);
    });

    it(
      'a write between the script read and its commit is CONCURRENT_MODIFICATION naming the id, nothing ' + 'committed',
      async () => {
        const s = await schema();
        const rec = await record(s.typeName, { n: 1 });
        const name = uniq('race');
        // Reads, then spins 700 ms in the sandbox (its own thread), then writes: the REST patch lands in between.
        await push(
          name,
          `export default async (input) => { const r = await records.get(input.params.id); const until = ` +
            `Date.now() + 700; while (Date.now() < until) {} await records.patch(r.id, { payload: { n: ` +
            `r.payload.n + 1 } }); return 1 }`,
        );
        const running = exec(name, { id: rec.id });
        await new Promise((r) => setTimeout(r, 250));
        const rest = await api.patch(`/v1/records/${rec.id}`, root, { payload: { n: 50 } });
        expect(rest.status, rest.text).toBe(200);
        const r = await running;
        expect(r.status, r.text).toBe(409);
        expect(r.body).toMatchObject({ errorCode: 'CONCURRENT_MODIFICATION', ids: [rec.id] });
        expect((await api.get(`/v1/records/${rec.id}`, root)).body.payload.n).toBe(50);
      },
    );

    it(
      'lists and lookups show committed rows as the script sees them: its deletes gone, its changes shown, ' +
        'its creates not listed',
      async () => {
        const s = await schema();
        const keep = await record(s.typeName, { n: 1 });
        const change = await record(s.typeName, { n: 2 });
        const gone = await record(s.typeName, { n: 3 });
        const name = uniq('list');
        await push(
          name,
          `export default async (input) => {
          const t = input.params.t;
          await records.create({ typeName: t, payload: { n: 4 } });
          await records.patch(input.params.change, { payload: { n: 20 } });
          await records.delete(input.params.gone);
          const page = await records.list({ type: t, limit: 10 });
          return page.data.map((r) => [r.id, r.payload.n]).sort((a, b) => a[1] - b[1]);
        }`,
        );
        const r = await exec(name, { t: s.typeName, change: change.id, gone: gone.id });
        expect(r.status, r.text).toBe(200);
        expect(r.body.result).toEqual([
          [keep.id, 1],
          [change.id, 20],
        ]);
        expect((await api.get(`/v1/records/${gone.id}`, root)).status).toBe(404);
      },
    );

    it(
      'lookups run the REST lookup with the script overlay; a range-indexed field adds a storage row per ' + 'write',
      async () => {
        const sc = await api.post('/v1/schemas', root, {
          typeName: uniq('L'),
          displayName: 'Lookup',
          allowedSurfaces: ['record'],
          fields: [
            { fieldId: 'name', fieldType: 'string' },
            { fieldId: 'age', fieldType: 'number' },
          ],
          lookupFields: ['name', { fieldName: 'age', rangeEnabled: true }],
        });
        expect(sc.status, sc.text).toBe(201);
        const t = sc.body.typeName;
        const a = await record(t, { name: 'ann', age: 30 });
        const b = await record(t, { name: 'ann', age: 40 });
        const name = uniq('lookup');
        await push(
          name,
          `export default async (input) => {
          await records.patch(input.params.b, { payload: { age: 41 } });
          const page = await records.lookup({ type: input.params.t, field: 'name', value: 'ann' });
          return page.data.map((r) => r.payload.age).sort();
        }`,
        );
        const r = await exec(name, { t, b: b.id });
        expect(r.status, r.text).toBe(200);
        expect(r.body.result).toEqual([30, 41]);
        expect(a.id).toBeDefined();
        // 1 row + 1 range-indexed field per record: 51 creates are 102 rows.
        const cap = uniq('cap2');
        await push(
          cap,
          `export default async (input) => { for (let i = 0; i < 51; i++) await records.create({ typeName: ` +
            `input.params.t, payload: { name: 'x' + i, age: i } }); return 1 }`,
        );
        const over = await exec(cap, { t });
        expect(over.status, over.text).toBe(400);
        expect(over.body).toMatchObject({ errorCode: 'WRITE_BUFFER_CAP_EXCEEDED', total: 102, limit: 100 });
      },
    );

    it('writes documents and folders in the same transaction', async () => {
      const name = uniq('docs');
      await push(
        name,
        `export default async () => {
          const f = await folders.create({ name: 'From a script' ` +
          `});
          const d = await documents.create({ title: 'Scripted', text: 'hello from a script', ` +
          `indexMode: 'NONE', folderId: f.id });
          const seen = await documents.get(d.id);
          ` +
          `return { folder: f.id, doc: d.id, title: seen.title, folderSeen: (await folders.get(f.id)).name ` +
          `};
        }`,
      );
      const r = await exec(name);
      expect(r.status, r.text).toBe(200);
      expect(r.body.result).toMatchObject({ title: 'Scripted', folderSeen: 'From a script' });
      expect((await api.get(`/v1/folders/${r.body.result.folder}`, root)).body.name).toBe('From a script');
      const doc = await api.get(`/v1/documents/${r.body.result.doc}`, root);
      expect(doc.status, doc.text).toBe(200);
      expect(doc.body.folderId).toBe(r.body.result.folder);
    });

    it('a write to a record the script only read fails the commit too (CONCURRENT_MODIFICATION names it)', async () => {
      const s = await schema();
      const read = await record(s.typeName, { n: 1 });
      const written = await record(s.typeName, { n: 1 });
      const name = uniq('readonly');
      await push(
        name,
        `export default async (input) => { const r = await records.get(input.params.read); const until = ` +
          `Date.now() + 700; while (Date.now() < until) {} await records.patch(input.params.written, { ` +
          `payload: { n: r.payload.n + 1 } }); return 1 }`,
      );
      const running = exec(name, { read: read.id, written: written.id });
      await new Promise((r) => setTimeout(r, 250));
      expect((await api.patch(`/v1/records/${read.id}`, root, { payload: { n: 7 } })).status).toBe(200);
      const r = await running;
      expect(r.status, r.text).toBe(409);
      expect(r.body).toMatchObject({ errorCode: 'CONCURRENT_MODIFICATION', ids: [read.id] });
      expect((await api.get(`/v1/records/${written.id}`, root)).body.payload.n).toBe(1);
    });

    it('caps the result: 256 KB without a key, 16 KB with one (RESULT_TOO_LARGE)', async () => {
      const name = uniq('res');
      await push(name, `export default (input) => 'x'.repeat(input.params.n)`);
      expect((await exec(name, { n: 200_000 })).status).toBe(200);
      const big = await exec(name, { n: 300_000 });
      expect(big.status).toBe(400);
      expect(big.body.errorCode).toBe('RESULT_TOO_LARGE');
      const keyed = await exec(name, { n: 20_000 }, root, { 'idempotency-key': uniq('k') });
      expect(keyed.status).toBe(400);
      expect(keyed.body.errorCode).toBe('RESULT_TOO_LARGE');
    });
  });

  describe('Idempotency-Key', () => {
    it(
      'returns the first response without re-running; another request with the key is 422; a duplicate in ' +
        'flight is 409',
      async () => {
        const s = await schema();
        const name = uniq('idem');
        await push(
          name,
          `export default async (input) => { const r = await records.create({ typeName: input.params.t, ` +
            `payload: {} }); const until = Date.now() + (input.params.wait ?? 0); while (Date.now() < until) ` +
            `{} return r.id }`,
        );
        const key = uniq('key');
        const first = await exec(name, { t: s.typeName }, root, { 'idempotency-key': key });
        expect(first.status, first.text).toBe(200);
        const again = await exec(name, { t: s.typeName }, root, { 'idempotency-key': key });
        expect(again.status).toBe(200);
        expect(again.body).toEqual(first.body);
        // The same input with its keys in another order is the same request: a replay.
        const keyed2 = uniq('key');
        const a = await exec(name, { t: s.typeName, wait: 0 }, root, { 'idempotency-key': keyed2 });
        const b = await exec(name, { wait: 0, t: s.typeName }, root, { 'idempotency-key': keyed2 });
        expect(b.status, b.text).toBe(200);
        expect(b.body).toEqual(a.body);
        const list = await api.get(`/v1/records?type=${s.typeName}`, root);
        expect(list.body.data).toHaveLength(2);
        const reused = await exec(name, { t: s.typeName, other: true }, root, { 'idempotency-key': key });
        expect(reused.status).toBe(422);
        expect(reused.body.errorCode).toBe('IDEMPOTENCY_KEY_REUSED');

        const slow = uniq('slow');
        const running = exec(name, { t: s.typeName, wait: 800 }, root, { 'idempotency-key': slow });
        await new Promise((r) => setTimeout(r, 250));
        const dup = await exec(name, { t: s.typeName, wait: 800 }, root, { 'idempotency-key': slow });
        expect(dup.status).toBe(409);
        expect(dup.body.errorCode).toBe('IDEMPOTENCY_IN_PROGRESS');
        expect((await running).status).toBe(200);
        expect(
          (await api.post('/v1/scripts/execute', root, { scriptRef: { name } }, { 'idempotency-key': 'bad key!' }))
            .status,
        ).toBe(400);
      },
    );
  });

  describe('an undeterminable outcome', () => {
    it.skipIf(!!inProcessOnly)(
      'is 500 EXECUTION_OUTCOME_UNKNOWN with execution.id, and a keyed retry gets the same answer without running',
      async () => {
        const s = await schema();
        const name = uniq('unknown');
        await push(
          name,
          `export default async (input) => (await records.create({ typeName: input.params.t, payload: {} })).id`,
        );
        const store = svc.service.store;
        const real = store.appendMulti;
        // The commit reaches the store, but its answer is lost (a dropped connection after the write). Only the
        // script's commit (the one creating the record) is hit: other appends (metering flushes) pass untouched.
        store.appendMulti = async function (requests) {
          if (!requests.some((r) => r.events.some((e) => e.type === 'RecordCreated')))
            return real.call(store, requests);
          store.appendMulti = real;
          await real.call(store, requests);
          throw new Error('connection reset after the write');
        };
        const key = uniq('k');
        try {
          const r = await exec(name, { t: s.typeName }, root, { 'idempotency-key': key });
          expect(r.status, r.text).toBe(500);
          expect(r.body.errorCode).toBe('EXECUTION_OUTCOME_UNKNOWN');
          expect(r.body.execution.id).toEqual(expect.any(String));
          const again = await exec(name, { t: s.typeName }, root, { 'idempotency-key': key });
          expect(again.status).toBe(500);
          expect(again.body.execution.id).toBe(r.body.execution.id);
        } finally {
          store.appendMulti = real;
        }
        // It ran once: one record.
        expect((await api.get(`/v1/records?type=${s.typeName}`, root)).body.data).toHaveLength(1);
      },
    );
  });

  describe('hostile scripts', () => {
    const expectCode = async (source: string, status: number, code: string) => {
      const name = uniq('h');
      await push(name, source);
      const r = await exec(name);
      expect(r.status, r.text).toBe(status);
      expect(r.body.errorCode).toBe(code);
      return r;
    };

    it('finds no process, require, fetch, timers or modules', async () => {
      await expectCode(
        `export default function () { return this.constructor.constructor('return process')() }`,
        400,
        'SCRIPT_ERROR',
      );
      await expectCode(
        `export default () => ({}).constructor.constructor('return process')().env`,
        400,
        'SCRIPT_ERROR',
      );
      await expectCode(
        `export default async () => (await import('fs')).readFileSync('/etc/passwd', 'utf8')`,
        400,
        'SCRIPT_ERROR',
      );
      await expectCode(`export default () => require('fs')`, 400, 'SCRIPT_ERROR');
      const name = uniq('walk');
      await push(
        name,
        `export default () => {
          const seen = new Set(); const found = [];
          const walk ` +
          `= (o, depth) => { if (!o || seen.has(o) || depth > 3) return; seen.add(o);
            for (const ` +
          `k of Object.getOwnPropertyNames(o)) { if ` +
          `(/^(process|require|fetch|setTimeout|setInterval|std|os|Deno|Bun)$/.test(k)) found.push(k); try { ` +
          `walk(o[k], depth + 1) } catch {} } };
          walk(globalThis, 0);
          return { found, ` +
          `types: [typeof process, typeof require, typeof fetch, typeof setTimeout, typeof setInterval, ` +
          `typeof queueMicrotask] };
        }`,
      );
      const r = await exec(name);
      expect(r.status, r.text).toBe(200);
      expect(r.body.result).toEqual({
        found: [],
        types: ['undefined', 'undefined', 'undefined', 'undefined', 'undefined', 'undefined'],
      });
    });

    it('prototype changes on the host objects stay in the sandbox', async () => {
      const s = await schema();
      const name = uniq('proto');
      await push(
        name,
        `export default async (input) => {
          Object.prototype.polluted = 'yes';
          records.__proto__.create = async () => 'hacked';
          let assigned = 'refused';
          try { records.create = async () => 'hacked'; assigned = 'allowed' } catch {}
          JSON.stringify = () => '{"typeName":"nope"}';
          const r = await records.create({ typeName: input.params.t, payload: { a: 1 } });
          return { assigned, id: r.id, payload: r.payload };
        }`,
      );
      const r = await exec(name, { t: s.typeName });
      expect(r.status, r.text).toBe(200);
      expect(r.body.result.assigned).toBe('refused');
      expect(r.body.result.payload).toEqual({ a: 1 });
      expect(({} as any).polluted).toBeUndefined();
      expect((await api.get(`/v1/records/${r.body.result.id}`, root)).status).toBe(200);
    });

    it('an endless loop ends in TIMEOUT while the service keeps answering', async () => {
      const name = uniq('loop');
      await push(name, `export default () => { for (;;) {} }`);
      const running = exec(name);
      await new Promise((r) => setTimeout(r, 300));
      const times: number[] = [];
      for (let i = 0; i < 5; i++) {
        const t = Date.now();
        const h = await api.get('/v1/scripts?name=' + name, root);
        expect(h.status).toBe(200);
        times.push(Date.now() - t);
      }
      expect(Math.max(...times)).toBeLessThan(500);
      const r = await running;
      expect(r.status, r.text).toBe(504);
      expect(r.body.errorCode).toBe('TIMEOUT');
    });

    it('a promise that never settles ends in TIMEOUT', async () => {
      await expectCode(`export default () => new Promise(() => {})`, 504, 'TIMEOUT');
    });

    it('a memory bomb and deep recursion end in RESOURCE_LIMIT_EXCEEDED', async () => {
      await expectCode(
        `export default () => new ArrayBuffer(200 * 1024 * 1024).byteLength`,
        400,
        'RESOURCE_LIMIT_EXCEEDED',
      );
      await expectCode(
        `export default () => { const f = (n) => f(n + 1) + 1; return f(0) }`,
        400,
        'RESOURCE_LIMIT_EXCEEDED',
      );
    });

    it(
      'a memory bomb that grinds inside the engine ends by the memory limit or at the deadline (its thread ' +
        'replaced), and the next run works',
      async () => {
        // Filling large arrays near the memory limit spends seconds inside the engine's native code, out of the
        // interrupt handler's reach: it ends by the memory limit or, at the latest, when its thread is terminated
        // a second after the deadline (504 TIMEOUT).
        for (const source of [
          `export default () => { const a = []; for (;;) a.push(new Array(100000).fill(a.length)) }`,
          `export default () => { const a = []; for (;;) a.push(new Float64Array(1 << 17)) }`,
          `export default () => { const keep = []; for (;;) keep.push(new ArrayBuffer(8 << 20)) }`,
          `export default () => 'x'.repeat(2 ** 28).length`,
        ]) {
          const name = uniq('native');
          await push(name, source);
          const t = Date.now();
          const r = await exec(name);
          // deadline, termination, a fresh thread's start on a busy machine
          expect(Date.now() - t).toBeLessThan(SCRIPT_TIMEOUT_MS + 1000 + 3000);
          expect([`504 TIMEOUT`, `400 RESOURCE_LIMIT_EXCEEDED`]).toContain(`${r.status} ${r.body.errorCode}`);
        }
        await expectCode(`export default () => { throw new Error('still here') }`, 400, 'SCRIPT_ERROR');
      },
      60_000,
    );

    it('more than 1,000 host calls is RESOURCE_LIMIT_EXCEEDED', async () => {
      // Each call is refused by the host (not an id) without touching the store, so 1,001 of them fit the lowered
      // wall clock on a loaded machine too; refused calls count like any other.
      await expectCode(
        `export default async () => { for (let i = 0; i < 1001; i++) { try { await records.get(i) } catch ` +
          `{} } return 1 }`,
        400,
        'RESOURCE_LIMIT_EXCEEDED',
      );
    });

    it('allows 4 concurrent executions per app context: the fifth is 429 with Retry-After 2', async () => {
      const name = uniq('conc');
      await push(
        name,
        `export default () => { const until = Date.now() + 600; while (Date.now() < until) {} return 1 }`,
      );
      const all = await Promise.all([0, 1, 2, 3, 4].map(() => exec(name)));
      const limited = all.filter((r) => r.status === 429);
      expect(all.filter((r) => r.status === 200)).toHaveLength(4);
      expect(limited).toHaveLength(1);
      expect(limited[0].headers.get('retry-after')).toBe('2');
      expect(limited[0].body.errorCode).toBe('RATE_LIMITED');
      // Every 429 says X-RateLimit-Remaining: 0 beside the plan maximum (spec "Rate limits"), whatever the burst count.
      expect(limited[0].headers.get('x-ratelimit-remaining')).toBe('0');
      expect(Number(limited[0].headers.get('x-ratelimit-limit'))).toBeGreaterThan(0);
    });

    it.skipIf(!!inProcessOnly)(
      'a run that could not start is 503 EXECUTION_CONTAINER_BUSY / EXECUTION_NOT_STARTED with Retry-After',
      async () => {
        const name = uniq('busy');
        await push(name, 'export default () => 1');
        const pool = (svc.service.scripts as unknown as { o: { pool: SandboxPool } }).o.pool;
        const real = pool.run;
        try {
          // Every sandbox busy and the queue full: the pool refuses the job (as SandboxPool.submit does).
          pool.run = () =>
            Promise.reject(
              new ServiceError('EXECUTION_CONTAINER_BUSY', 'Every sandbox is busy; retry', {
                headers: { 'retry-after': '2' },
              }),
            );
          const busy = await exec(name);
          expect(busy.status, busy.text).toBe(503);
          expect(busy.body.errorCode).toBe('EXECUTION_CONTAINER_BUSY');
          expect(busy.headers.get('retry-after')).toBe('2');
          // The service stopping: a queued job is settled as never started (as SandboxPool.close does).
          pool.run = async () => ({
            ok: false,
            errorCode: 'EXECUTION_NOT_STARTED',
            message: 'The service is stopping',
            hostCalls: 0,
            durationMs: 0,
          });
          const stopping = await exec(name, undefined, root, { 'idempotency-key': uniq('k') });
          expect(stopping.status, stopping.text).toBe(503);
          expect(stopping.body.errorCode).toBe('EXECUTION_NOT_STARTED');
          expect(Number(stopping.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
        } finally {
          pool.run = real;
        }
        expect((await exec(name)).status).toBe(200);
      },
    );

    it('meters executions in the usage report', async () => {
      const r = await api.get('/v1/usage', root);
      expect(r.status, r.text).toBe(200);
      expect(r.body.execution.executions).toBeGreaterThan(10);
      expect(r.body.execution.totalMillis).toBeGreaterThan(1000);
      expect(r.body.execution).toHaveProperty('billableMillis');
      expect(r.body.execution).toHaveProperty('creditsMilli');
    });
  });
}

describe('scripts (embedded engines)', () => scriptsSuite('embedded'));
// Through the router (E2E_TARGET=router) the deployment is on PostgreSQL either way: the suite runs once.
if (serverUrl('postgres') && !THROUGH_ROUTER)
  describe('scripts on PostgreSQL (DATABASE_URL)', () => scriptsSuite('postgres'));
