import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, startService, type Api, type TestService } from '../support/service';

/**
 * Trigger rules and the trigger runner (docs/triggers.md; spec "Scripts",
 * decisions §4, §7): declaration rules and their refusals, the 409s on schema
 * changes, firing with only the declared fields, DELETE stops firing, terminal
 * failures listed, the depth limit stopping a loop.
 */
let svc: TestService;
let api: Api;
let root: string;

beforeAll(async () => {
  svc = await startService({ env: { SCRIPT_TIMEOUT_MS: '3000', WEBHOOK_RETRY_SCALE: '0.001' } });
  api = svc.api;
  root = svc.bootstrap.tenants.live.rootKey;
});

afterAll(async () => {
  await svc?.stop();
});

const uniq = (p: string) => `${p}_${randomUUID().slice(0, 8)}`;

async function push(name: string, source: string) {
  const r = await api.post('/v1/scripts', root, { name, source });
  expect(r.status, r.text).toBe(201);
  return r.body as { id: string; version: number };
}

/**
 * A schema that triggers may fire off: amount (inline), status (filterable), ref (lookup), notes (plain), secret
 * (sensitive).
 */
async function invoiceSchema(capabilities: Record<string, boolean> = { triggersEnabled: true }) {
  const r = await api.post('/v1/schemas', root, {
    typeName: uniq('Invoice'),
    displayName: 'Invoice',
    allowedSurfaces: ['record'],
    capabilities,
    fields: [
      { fieldId: 'amount', fieldType: 'number', inline: true },
      { fieldId: 'status', fieldType: 'string', filterable: true },
      { fieldId: 'ref', fieldType: 'string' },
      { fieldId: 'notes', fieldType: 'string' },
      { fieldId: 'secret', fieldType: 'string', sensitive: true },
    ],
    lookupFields: ['ref'],
  });
  expect(r.status, r.text).toBe(201);
  return r.body as {
    id: string;
    typeName: string;
    fields: unknown[];
    lookupFields: unknown[];
    capabilities: Record<string, boolean>;
  };
}

async function bareSchema() {
  const r = await api.post('/v1/schemas', root, {
    typeName: uniq('Audit'),
    displayName: 'Audit',
    allowedSurfaces: ['record'],
  });
  expect(r.status, r.text).toBe(201);
  return r.body as { id: string; typeName: string };
}

/** A script that writes one audit record per firing, carrying the input it saw. */
const auditSource = (auditType: string) =>
  `export default async (input) => {
  await records.create({ typeName: ${JSON.stringify(auditType)}, ` +
  `payload: { event: input.event, recordId: input.recordId, schemaId: input.schemaId, record: input.record, ` +
  `previous: input.previous === undefined ? '(absent)' : input.previous, statusIsUndefined: ` +
  `input.record.status === undefined } });
  return 'ok';
}`;

async function listAll(typeName: string): Promise<Array<Record<string, any>>> {
  const r = await api.get(`/v1/records?type=${typeName}&limit=100&includePayload=true`, root);
  expect(r.status, r.text).toBe(200);
  return r.body.data;
}

const declare = (body: Record<string, unknown>, token = root) => api.post('/v1/triggers', token, body);

const rule = (schemaId: string, script: string, over: Record<string, unknown> = {}) => ({
  name: uniq('rule'),
  schemaId,
  events: ['CREATE', 'UPDATE', 'DELETE'],
  scriptRef: { name: script, version: 1 },
  fields: ['amount', 'status'],
  grant: { allowedActions: ['records:r', 'records:c'] },
  ...over,
});

describe('firing', () => {
  it(
    'runs the script on CREATE / UPDATE / DELETE with only the declared fields, and stops once the rule is ' +
      'deleted',
    async () => {
      const inv = await invoiceSchema();
      const audit = await bareSchema();
      const script = uniq('audit');
      await push(script, auditSource(audit.typeName));
      const r = await declare(rule(inv.id, script));
      expect(r.status, r.text).toBe(201);
      expect(r.body).toMatchObject({
        schemaId: inv.id,
        typeName: inv.typeName,
        events: ['CREATE', 'UPDATE', 'DELETE'],
        scriptRef: { name: script, version: 1 },
        fields: ['amount', 'status'],
        enabled: true,
        grant: { allowedActions: ['records:r', 'records:c'], dataScope: null },
      });
      const ruleId = r.body.id as string;
      expect((await api.get(`/v1/triggers/${ruleId}`, root)).body).toEqual(r.body);
      const list = await api.get(`/v1/triggers?schemaId=${inv.id}`, root);
      expect(list.status).toBe(200);
      expect(list.body).toEqual({ data: [r.body], nextCursor: null });

      const rec = await api.post('/v1/records', root, {
        typeName: inv.typeName,
        payload: { amount: 10, notes: 'n', secret: 's', ref: 'R1' },
      });
      expect(rec.status, rec.text).toBe(201);
      const upd = await api.put(`/v1/records/${rec.body.id}`, root, {
        payload: { amount: 12, status: 'paid', notes: 'm', ref: 'R1' },
      });
      expect(upd.status, upd.text).toBe(200);
      const del = await api.del(`/v1/records/${rec.body.id}`, root);
      expect(del.status).toBe(204);
      const rows = (await eventually(async () => {
        const all = await listAll(audit.typeName);
        return all.length >= 3 ? all : null;
      }, 20_000))!;
      const byEvent = Object.fromEntries(rows.map((x) => [x.payload.event, x.payload]));
      expect(byEvent.CREATE).toEqual({
        event: 'CREATE',
        recordId: rec.body.id,
        schemaId: inv.id,
        record: { amount: 10 },
        previous: '(absent)',
        statusIsUndefined: true,
      });
      expect(byEvent.UPDATE).toEqual({
        event: 'UPDATE',
        recordId: rec.body.id,
        schemaId: inv.id,
        record: { amount: 12, status: 'paid' },
        previous: { amount: 10 },
        statusIsUndefined: false,
      });
      expect(byEvent.DELETE).toMatchObject({
        event: 'DELETE',
        record: { amount: 12, status: 'paid' },
        previous: '(absent)',
      });

      expect((await api.del(`/v1/triggers/${ruleId}`, root)).status).toBe(204);
      expect((await api.get(`/v1/triggers/${ruleId}`, root)).status).toBe(404);
      expect((await api.del(`/v1/triggers/${ruleId}`, root)).status).toBe(404);
      await api.post('/v1/records', root, { typeName: inv.typeName, payload: { amount: 1 } });
      // A second rule on another schema proves the runner got past the write: after its firing, no more audits of the
      // deleted rule.
      const other = await invoiceSchema();
      await declare(rule(other.id, script, { events: ['CREATE'] }));
      await api.post('/v1/records', root, { typeName: other.typeName, payload: { amount: 2 } });
      await eventually(async () => (await listAll(audit.typeName)).length >= 4, 20_000);
      const after = await listAll(audit.typeName);
      expect(after).toHaveLength(4);
      expect(after.filter((x) => x.payload.schemaId === inv.id)).toHaveLength(3);
    },
  );

  it('lists terminal failures within seconds (SCRIPT_ERROR, AUTHORIZATION_DENIED)', async () => {
    const inv = await invoiceSchema();
    const audit = await bareSchema();
    const thrower = uniq('thrower');
    await push(thrower, `export default () => { throw new Error('no thanks'); }`);
    const writer = uniq('writer');
    await push(writer, auditSource(audit.typeName));
    const r1 = await declare(rule(inv.id, thrower, { events: ['CREATE'] }));
    expect(r1.status, r1.text).toBe(201);
    // Its grant may read but not create: the script's create is refused.
    const r2 = await declare(rule(inv.id, writer, { events: ['CREATE'], grant: { allowedActions: ['records:r'] } }));
    expect(r2.status, r2.text).toBe(201);
    const rec = await api.post('/v1/records', root, { typeName: inv.typeName, payload: { amount: 1 } });
    const failures = (await eventually(async () => {
      const l = await api.get('/v1/trigger-failures?limit=100', root);
      const mine = (l.body.data as Array<Record<string, any>>).filter(
        (f) => f.ruleId === r1.body.id || f.ruleId === r2.body.id,
      );
      return mine.length >= 2 ? mine : null;
    }, 10_000))!;
    const thrown = failures.find((f) => f.ruleId === r1.body.id)!;
    expect(thrown).toMatchObject({
      scriptRef: { name: thrower, version: 1 },
      recordId: rec.body.id,
      event: 'CREATE',
      reason: 'SCRIPT_ERROR',
      attempts: 1,
    });
    expect(thrown.message).toContain('no thanks');
    expect(Object.keys(thrown).sort()).toEqual([
      'attempts',
      'event',
      'firstFailedAt',
      'id',
      'lastFailedAt',
      'message',
      'reason',
      'recordId',
      'ruleId',
      'scriptRef',
    ]);
    expect(failures.find((f) => f.ruleId === r2.body.id)).toMatchObject({ reason: 'AUTHORIZATION_DENIED' });
    const filtered = await api.get(`/v1/trigger-failures?ruleId=${r1.body.id}`, root);
    expect(filtered.body.data).toHaveLength(1);
  });

  it('records INPUT_TOO_LARGE when record plus previous is over 224 KB, without running the script', async () => {
    const inv = await invoiceSchema();
    const audit = await bareSchema();
    const script = uniq('big');
    await push(script, auditSource(audit.typeName));
    const r = await declare(rule(inv.id, script, { events: ['UPDATE'], fields: ['amount', 'status'] }));
    expect(r.status, r.text).toBe(201);
    const rec = await api.post('/v1/records', root, {
      typeName: inv.typeName,
      payload: { amount: 1, status: 'a'.repeat(120 * 1024) },
    });
    expect(rec.status, rec.text).toBe(201);
    const upd = await api.put(`/v1/records/${rec.body.id}`, root, {
      payload: { amount: 2, status: 'b'.repeat(120 * 1024) },
    });
    expect(upd.status, upd.text).toBe(200);
    const failure = await eventually(
      async () => (await api.get(`/v1/trigger-failures?ruleId=${r.body.id}`, root)).body.data[0],
      10_000,
    );
    expect(failure).toMatchObject({ reason: 'INPUT_TOO_LARGE', event: 'UPDATE', recordId: rec.body.id, attempts: 1 });
    expect(await listAll(audit.typeName)).toHaveLength(0);
  });

  it(
    'fills grant placeholders from the record; a grant that cannot read the record gets empty record and ' + 'previous',
    async () => {
      const inv = await invoiceSchema();
      const audit = await bareSchema();
      const script = uniq('owned');
      await push(
        script,
        `export default async (input) => {
      const seen = await records.get(input.recordId);
      ` +
          `await records.create({ typeName: ${JSON.stringify(audit.typeName)}, payload: { recordId: ` +
          `input.recordId, owner: input.userId, record: input.record, readable: seen !== null } });
    }`,
      );
      const r = await declare(
        rule(inv.id, script, {
          events: ['CREATE'],
          fields: ['amount'],
          grant: { allowedActions: ['records:r', 'records:c'], dataScope: { userId: '${{ input.userId }}' } },
        }),
      );
      expect(r.status, r.text).toBe(201);
      const owned = await api.post('/v1/records', root, {
        typeName: inv.typeName,
        userId: 'alice',
        payload: { amount: 5 },
      });
      expect(owned.status, owned.text).toBe(201);
      const unowned = await api.post('/v1/records', root, { typeName: inv.typeName, payload: { amount: 6 } });
      expect(unowned.status, unowned.text).toBe(201);
      const rows = (await eventually(async () => {
        const all = await listAll(audit.typeName);
        return all.length >= 2 ? all : null;
      }, 10_000).catch(async (e) => {
        const failures = (await api.get(`/v1/trigger-failures?ruleId=${r.body.id}`, root)).body;
        throw new Error(`${String(e)}: ${JSON.stringify(failures)} ${JSON.stringify(await listAll(audit.typeName))}`);
      }))!;
      const of = (id: string) => rows.find((x) => x.payload.recordId === id)!;
      expect(of(owned.body.id)).toMatchObject({
        userId: 'alice',
        payload: { owner: 'alice', record: { amount: 5 }, readable: true },
      });
      expect(of(unowned.body.id).payload).toMatchObject({ owner: null, record: {}, readable: false });
    },
  );

  it(
    'scriptRef.version "latest" runs the newest live version at each firing; its failures show the version ' +
      'as declared',
    async () => {
      const inv = await invoiceSchema();
      const audit = await bareSchema();
      const script = uniq('follow');
      const marking = (mark: string) =>
        `export default async (input) => { await records.create({ typeName: ` +
        `${JSON.stringify(audit.typeName)}, payload: { mark: ${JSON.stringify(mark)}, recordId: ` +
        `input.recordId } }); }`;
      await push(script, marking('v1'));
      const r = await declare(
        rule(inv.id, script, { events: ['CREATE'], scriptRef: { name: script, version: 'latest' } }),
      );
      expect(r.status, r.text).toBe(201);
      expect(r.body.scriptRef).toEqual({ name: script, version: 'latest' });
      expect((await api.get(`/v1/triggers/${r.body.id}`, root)).body.scriptRef).toEqual({
        name: script,
        version: 'latest',
      });
      const marks = async (n: number) =>
        (await eventually(async () => {
          const all = await listAll(audit.typeName);
          return all.length >= n ? all : null;
        }, 20_000))!.map((x) => x.payload.mark);
      await api.post('/v1/records', root, { typeName: inv.typeName, payload: { amount: 1 } });
      expect(await marks(1)).toEqual(['v1']);
      // A version pushed after the declaration is the one the next firing runs.
      await push(script, marking('v2'));
      await api.post('/v1/records', root, { typeName: inv.typeName, payload: { amount: 2 } });
      expect((await marks(2)).sort()).toEqual(['v1', 'v2']);
      // A newest version that throws: the failure names the rule's scriptRef as declared.
      await push(script, `export default () => { throw new Error('v3 is broken'); }`);
      const rec = await api.post('/v1/records', root, { typeName: inv.typeName, payload: { amount: 3 } });
      const failure = await eventually(
        async () => (await api.get(`/v1/trigger-failures?ruleId=${r.body.id}`, root)).body.data[0],
        10_000,
      );
      expect(failure).toMatchObject({
        scriptRef: { name: script, version: 'latest' },
        recordId: rec.body.id,
        reason: 'SCRIPT_ERROR',
      });
      expect(failure.message).toContain('v3 is broken');
    },
  );

  it('stops a loop at the depth limit and lists it', async () => {
    const loop = await invoiceSchema();
    const script = uniq('loop');
    await push(
      script,
      `export default async (input) => { await records.create({ typeName: ` +
        `${JSON.stringify(loop.typeName)}, payload: { amount: (input.record.amount ?? 0) + 1 } }); }`,
    );
    const r = await declare(rule(loop.id, script, { events: ['CREATE'], fields: ['amount'] }));
    expect(r.status, r.text).toBe(201);
    await api.post('/v1/records', root, { typeName: loop.typeName, payload: { amount: 0 } });
    const failure = await eventually(async () => {
      const l = await api.get(`/v1/trigger-failures?ruleId=${r.body.id}`, root);
      return l.body.data[0];
    }, 30_000);
    expect(failure).toMatchObject({ reason: 'TRIGGER_DEPTH_EXCEEDED' });
    const all = await listAll(loop.typeName);
    // The client's write plus 8 chained firings.
    expect(all.map((x) => x.payload.amount).sort((a, b) => a - b)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8]);
  });
});

describe('declaration refusals', () => {
  let inv: Awaited<ReturnType<typeof invoiceSchema>>;
  let script: string;
  beforeAll(async () => {
    inv = await invoiceSchema();
    script = uniq('noop');
    await push(script, 'export default () => null');
  });

  it('400 for fields that are not projectable, listing the projectable ones', async () => {
    for (const f of ['notes', 'secret', 'missing']) {
      const r = await declare(rule(inv.id, script, { fields: [f] }));
      expect(r.status, f).toBe(400);
      expect(r.body.projectableFields).toEqual(['amount', 'status', 'ref']);
    }
  });

  it('400 for a schema without triggersEnabled', async () => {
    const off = await invoiceSchema({});
    expect((await declare(rule(off.id, script))).status).toBe(400);
  });

  it('400 without a records:r clause on the type, or with a literal data scope; placeholders are fine', async () => {
    expect((await declare(rule(inv.id, script, { grant: { allowedActions: ['records:c'] } }))).status).toBe(400);
    expect((await declare(rule(inv.id, script, { grant: { allowedActions: ['records:r:other'] } }))).status).toBe(400);
    expect(
      (await declare(rule(inv.id, script, { grant: { allowedActions: ['records:r'], dataScope: { userId: 'u-1' } } })))
        .status,
    ).toBe(400);
    expect(
      (
        await declare(
          rule(inv.id, script, {
            grant: { allowedActions: ['records:r'], dataScope: { userId: '${{ input.userId }}' } },
          }),
        )
      ).status,
    ).toBe(201);
    expect(
      (await declare(rule(inv.id, script, { grant: { allowedActions: [`records:r:${inv.typeName}`] } }))).status,
    ).toBe(201);
    expect(
      (
        await declare(
          rule(inv.id, script, { fields: [], grant: { allowedActions: ['records:c'], dataScope: { userId: 'u-1' } } }),
        )
      ).status,
    ).toBe(201);
  });

  it(
    'scriptRef.version: a positive integer, its decimal string (shown as the number) or "latest"; anything ' +
      'else 400',
    async () => {
      const asString = await declare(rule(inv.id, script, { scriptRef: { name: script, version: '1' } }));
      expect(asString.status, asString.text).toBe(201);
      expect(asString.body.scriptRef).toEqual({ name: script, version: 1 });
      expect((await api.get(`/v1/triggers/${asString.body.id}`, root)).body.scriptRef).toEqual({
        name: script,
        version: 1,
      });
      const latest = await declare(rule(inv.id, script, { scriptRef: { name: script, version: 'latest' } }));
      expect(latest.status, latest.text).toBe(201);
      expect(latest.body.scriptRef).toEqual({ name: script, version: 'latest' });
      const listed = await api.get(`/v1/triggers?schemaId=${inv.id}&limit=100`, root);
      expect(listed.body.data.find((x: any) => x.id === latest.body.id).scriptRef).toEqual({
        name: script,
        version: 'latest',
      });
      for (const version of [0, -1, 1.5, '0', '01', '1.5', 'abc', 'LATEST', '', null]) {
        const r = await declare(rule(inv.id, script, { scriptRef: { name: script, version } }));
        expect(r.status, `${JSON.stringify(version)}: ${r.text}`).toBe(400);
      }
      expect((await declare(rule(inv.id, script, { scriptRef: { name: script, version: '9' } }))).status).toBe(404);
      // "latest" of a name with no live version is the same 404.
      expect(
        (await declare(rule(inv.id, uniq('nope'), { scriptRef: { name: uniq('nope'), version: 'latest' } }))).status,
      ).toBe(404);
    },
  );

  it(
    '400 for a bad body; 404 for an unknown schema or script version; 403 without triggers:c or with a ' +
      'wider grant',
    async () => {
      expect((await declare({ ...rule(inv.id, script), fields: undefined })).status).toBe(400);
      expect((await declare(rule(inv.id, script, { events: ['INSERT'] }))).status).toBe(400);
      expect((await declare(rule(randomUUID(), script))).status).toBe(404);
      expect((await declare(rule(inv.id, script, { scriptRef: { name: script, version: 9 } }))).status).toBe(404);
      expect((await declare(rule(inv.id, uniq('nope')))).status).toBe(404);
      const tok = await api.post('/v1/tokens', root, { scope: { allowedActions: ['records:r'] } });
      expect(tok.status, tok.text).toBe(201);
      expect((await declare(rule(inv.id, script), tok.body.token)).status).toBe(403);
      const tok2 = await api.post('/v1/tokens', root, { scope: { allowedActions: ['triggers:c', 'records:r'] } });
      expect((await declare(rule(inv.id, script), tok2.body.token)).status).toBe(403);
    },
  );
});

describe('schema changes while rules fire', () => {
  it(
    '409 for dropping a projected field, making it non-inline, turning triggersEnabled off or deleting the ' +
      'schema; fine once the rules are gone',
    async () => {
      const inv = await invoiceSchema();
      const script = uniq('noop');
      await push(script, 'export default () => null');
      const r = await declare(rule(inv.id, script, { fields: ['amount'] }));
      expect(r.status, r.text).toBe(201);
      const fields = inv.fields as Array<Record<string, unknown>>;
      const put = (body: Record<string, unknown>) =>
        api.put(`/v1/schemas/${inv.id}`, root, {
          displayName: 'Invoice',
          allowedSurfaces: ['record'],
          fields,
          lookupFields: ['ref'],
          capabilities: { triggersEnabled: true },
          ...body,
        });
      expect(
        (await put({ fields: fields.map((f) => (f.fieldId === 'amount' ? { ...f, inline: false } : f)) })).status,
      ).toBe(409);
      expect((await put({ fields: fields.filter((f) => f.fieldId !== 'amount') })).status).toBe(409);
      expect((await put({ capabilities: { triggersEnabled: false } })).status).toBe(409);
      expect((await put({ capabilities: { auditHistory: true } })).status).toBe(409);
      expect((await api.del(`/v1/schemas/${inv.id}`, root)).status).toBe(409);
      // Changes that keep the projected fields projectable are fine.
      const ok = await put({
        description: 'still fine',
        fields: fields.map((f) => (f.fieldId === 'status' ? { ...f, filterable: false } : f)),
      });
      expect(ok.status, ok.text).toBe(200);
      expect((await api.del(`/v1/triggers/${r.body.id}`, root)).status).toBe(204);
      expect((await put({ capabilities: { triggersEnabled: false } })).status).toBe(200);
      expect((await api.del(`/v1/schemas/${inv.id}`, root)).status).toBe(204);
    },
  );
});
