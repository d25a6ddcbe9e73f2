import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startService, type Api, type Bootstrap, type TestService } from '../support/service';

/**
 * Hardening of request validation (docs/api.md "Schemas and records",
 * "Lookups", "Conventions"): tenant-authored `validation.pattern` runs in linear
 * time (RE2) and is checked at schema write; PUT / PATCH need a JSON object
 * body; range lookups reject bad and inverted bounds; PATCH accepts
 * `application/merge-patch+json`; `__proto__` keys are a 400 anywhere in a JSON
 * body while `constructor` / `prototype` are ordinary names. Every rejection is
 * a 400 VALIDATION_ERROR and changes nothing.
 */
let svc: TestService;
let api: Api;
let acct: Bootstrap;
let root: string;

type Res = Awaited<ReturnType<Api['call']>>;

beforeAll(async () => {
  svc = await startService();
  api = svc.api;
  acct = await api.newAccount({ plan: 'enterprise', rateLimitPerMinute: 1_000_000, creditLimit: 1_000_000_000 });
  root = acct.tenants.live.rootKey;
});

afterAll(async () => {
  await svc?.stop();
});

const uniq = (p: string) => `${p}_${randomUUID().slice(0, 8)}`;

function expect400(r: Res) {
  expect(r.status, r.text).toBe(400);
  expect(r.body.errorCode).toBe('VALIDATION_ERROR');
  expect(r.body.requestId).toBe(r.headers.get('x-request-id'));
  expect(typeof r.body.message).toBe('string');
}

async function createSchema(over: Record<string, unknown> = {}) {
  const r = await api.post('/v1/schemas', root, {
    typeName: uniq('H'),
    displayName: 'Hardening',
    allowedSurfaces: ['record'],
    ...over,
  });
  expect(r.status, r.text).toBe(201);
  return r.body as { id: string; typeName: string; schemaVersion: number };
}

async function createRecord(body: Record<string, unknown>) {
  const r = await api.post('/v1/records', root, body);
  expect(r.status, r.text).toBe(201);
  return r.body;
}

/** The entity as read (indexStatus and document status left out: they may advance on their own). */
async function snapshot(path: string) {
  const r = await api.get(path, root);
  expect(r.status, r.text).toBe(200);
  const { indexStatus: _i, status: _s, ...rest } = r.body;
  return { entity: rest, version: r.body.version };
}

const raw = (method: string, path: string, text: string | undefined, contentType = 'application/json') =>
  api.call(method, path, {
    token: root,
    ...(text === undefined ? {} : { raw: text, headers: { 'content-type': contentType } }),
  });

describe('validation.pattern: linear-time matching, checked at schema write', () => {
  it('a catastrophic-backtracking pattern answers at once with the pattern 400', async () => {
    const s = await createSchema({
      fields: [{ fieldId: 'code', fieldType: 'string', validation: { pattern: '^(a+)+$' } }],
    });
    // 30 characters take seconds with a backtracking engine; 10,000 would never finish.
    for (const n of [30, 10_000]) {
      const t0 = performance.now();
      const r = await api.post('/v1/records', root, { typeName: s.typeName, payload: { code: 'a'.repeat(n) + '!' } });
      const ms = performance.now() - t0;
      expect400(r);
      expect(r.body.message).toMatch(/pattern/);
      expect(ms, `${n} chars took ${ms} ms`).toBeLessThan(2000);
    }
    // The pattern still validates: a matching value is accepted.
    await createRecord({ typeName: s.typeName, payload: { code: 'a'.repeat(10_000) } });
  });

  it('patterns keep their meaning: anchors, classes, \\p{L}, \\uXXXX escapes, unanchored search', async () => {
    const s = await createSchema({
      fields: [
        { fieldId: 'zip', fieldType: 'string', validation: { pattern: '^\\d{5}(-\\d{4})?$' } },
        { fieldId: 'word', fieldType: 'string', validation: { pattern: '^\\p{L}+$' } },
        { fieldId: 'accent', fieldType: 'string', validation: { pattern: '\\u00e9' } },
      ],
    });
    await createRecord({
      typeName: s.typeName,
      payload: { zip: '12345-6789', word: 'Ünïcødé', accent: 'café au lait' },
    });
    expect400(await api.post('/v1/records', root, { typeName: s.typeName, payload: { zip: '1234' } }));
    expect400(await api.post('/v1/records', root, { typeName: s.typeName, payload: { word: 'abc1' } }));
    expect400(await api.post('/v1/records', root, { typeName: s.typeName, payload: { accent: 'cafe' } }));
  });

  it.each([
    ['lookbehind', '(?<=a)b'],
    ['lookahead', 'a(?=b)'],
    ['negative lookahead', '^(?!x).*$'],
    ['backreference', '(a)\\1'],
    ['over 1,000 characters', 'a'.repeat(1001)],
    ['invalid syntax', '(abc'],
  ])('a %s pattern is a 400 at createSchema and nothing is stored', async (_, pattern) => {
    const typeName = uniq('P');
    const r = await api.post('/v1/schemas', root, {
      typeName,
      displayName: 'P',
      allowedSurfaces: ['record'],
      fields: [{ fieldId: 'f', fieldType: 'string', validation: { pattern } }],
    });
    expect400(r);
    // Not created: the typeName is free, a create without the pattern is a fresh 201.
    const ok = await api.post('/v1/schemas', root, { typeName, displayName: 'P', allowedSurfaces: ['record'] });
    expect(ok.status, ok.text).toBe(201);
    expect(ok.body.schemaVersion).toBe(1);
  });

  it('a lookbehind pattern is a 400 at updateSchema and the schema is unchanged', async () => {
    const s = await createSchema({ fields: [{ fieldId: 'f', fieldType: 'string', validation: { pattern: '^x' } }] });
    const before = await api.get(`/v1/schemas/${s.id}`, root);
    const r = await api.put(`/v1/schemas/${s.id}`, root, {
      fields: [{ fieldId: 'f', fieldType: 'string', validation: { pattern: '(?<!a)b' } }],
    });
    expect400(r);
    const after = await api.get(`/v1/schemas/${s.id}`, root);
    expect(after.body).toEqual(before.body);
    expect(after.body.schemaVersion).toBe(1);
  });
});

describe('PUT / PATCH need a JSON object body', () => {
  const bodies: Array<[string, string | undefined, string?]> = [
    ['JSON null', 'null'],
    ['an empty body', ''],
    ['no body and no content type', undefined],
    ['a JSON array', '[]'],
    ['a JSON string', '"x"'],
  ];

  it.each(bodies)('record PUT / PATCH with %s → 400, record untouched', async (_, text) => {
    const s = await createSchema({ fields: [{ fieldId: 'name', fieldType: 'string' }] });
    const rec = await createRecord({ typeName: s.typeName, payload: { name: 'keep' } });
    const path = `/v1/records/${rec.id}`;
    const before = await snapshot(path);
    expect400(await raw('PUT', path, text));
    expect400(await raw('PATCH', path, text));
    expect400(await raw('PATCH', path, text, 'application/merge-patch+json'));
    const after = await snapshot(path);
    expect(after).toEqual(before);
    expect(after.version).toBe(1);
    expect(after.entity.payload).toEqual({ name: 'keep' });
  });

  it.each(bodies)('document PUT / PATCH with %s → 400, document untouched', async (_, text) => {
    const d = await api.post('/v1/documents', root, {
      title: uniq('Doc'),
      text: 'keep me',
      indexMode: 'NONE',
      payload: { a: 1 },
    });
    expect(d.status, d.text).toBe(201);
    const path = `/v1/documents/${d.body.id}`;
    const before = await snapshot(path);
    expect400(await raw('PUT', path, text));
    expect400(await raw('PATCH', path, text));
    expect(await snapshot(path)).toEqual(before);
  });

  it.each(bodies)('folder PUT / PATCH with %s → 400, folder untouched', async (_, text) => {
    const f = await api.post('/v1/folders', root, { name: uniq('Folder'), description: 'keep' });
    expect(f.status, f.text).toBe(201);
    const path = `/v1/folders/${f.body.id}`;
    const before = await snapshot(path);
    expect400(await raw('PUT', path, text));
    expect400(await raw('PATCH', path, text));
    expect(await snapshot(path)).toEqual(before);
  });

  it('schema PUT with a null body → 400, schema unchanged', async () => {
    const s = await createSchema({ fields: [{ fieldId: 'name', fieldType: 'string' }] });
    const before = await api.get(`/v1/schemas/${s.id}`, root);
    expect400(await raw('PUT', `/v1/schemas/${s.id}`, 'null'));
    expect400(await raw('PUT', `/v1/schemas/${s.id}`, ''));
    expect((await api.get(`/v1/schemas/${s.id}`, root)).body).toEqual(before.body);
  });
});

describe('PATCH accepts application/merge-patch+json (RFC 7386)', () => {
  it('record, document and folder PATCH with the merge-patch media type apply the patch', async () => {
    const s = await createSchema({
      fields: [
        { fieldId: 'name', fieldType: 'string' },
        { fieldId: 'n', fieldType: 'number' },
      ],
    });
    const rec = await createRecord({ typeName: s.typeName, payload: { name: 'a', n: 1 } });
    const r = await raw(
      'PATCH',
      `/v1/records/${rec.id}`,
      JSON.stringify({ payload: { n: null, name: 'b' } }),
      'application/merge-patch+json',
    );
    expect(r.status, r.text).toBe(200);
    expect(r.body.payload).toEqual({ name: 'b' });
    expect(r.body.version).toBe(2);
    const withCharset = await raw(
      'PATCH',
      `/v1/records/${rec.id}`,
      JSON.stringify({ status: 'DONE' }),
      'application/merge-patch+json; charset=utf-8',
    );
    expect(withCharset.status, withCharset.text).toBe(200);
    expect(withCharset.body.status).toBe('DONE');

    const d = await api.post('/v1/documents', root, { title: 'before', text: 'body', indexMode: 'NONE' });
    const dp = await raw(
      'PATCH',
      `/v1/documents/${d.body.id}`,
      JSON.stringify({ title: 'after' }),
      'application/merge-patch+json',
    );
    expect(dp.status, dp.text).toBe(200);
    expect(dp.body.title).toBe('after');

    const f = await api.post('/v1/folders', root, { name: uniq('F') });
    const fp = await raw(
      'PATCH',
      `/v1/folders/${f.body.id}`,
      JSON.stringify({ description: 'patched' }),
      'application/merge-patch+json',
    );
    expect(fp.status, fp.text).toBe(200);
    expect(fp.body.description).toBe('patched');
  });

  it('/openapi.json lists the merge-patch media type on PATCH operations', async () => {
    const spec = (await api.get('/openapi.json')).body;
    expect(Object.keys(spec.paths['/v1/records/{id}'].patch.requestBody.content).sort()).toEqual([
      'application/json',
      'application/merge-patch+json',
    ]);
    expect(Object.keys(spec.paths['/v1/records/{id}'].put.requestBody.content)).toEqual(['application/json']);
  });

  it('the merge-patch body obeys the same JSON rules (numbers, syntax)', async () => {
    const s = await createSchema({ fields: [{ fieldId: 'n', fieldType: 'number' }] });
    const rec = await createRecord({ typeName: s.typeName, payload: { n: 1 } });
    expect400(await raw('PATCH', `/v1/records/${rec.id}`, '{"payload": {"n": 1e400}}', 'application/merge-patch+json'));
    expect400(await raw('PATCH', `/v1/records/${rec.id}`, '{"payload": ', 'application/merge-patch+json'));
    expect((await api.get(`/v1/records/${rec.id}`, root)).body.version).toBe(1);
  });
});

describe('bodies are JSON only: any other media type is 415 UNSUPPORTED_MEDIA_TYPE (docs/api.md "Errors")', () => {
  it('a JSON body sent as text/plain (or another type) is 415, not read as a string, nothing is written', async () => {
    const s = await createSchema({ fields: [{ fieldId: 'name', fieldType: 'string' }] });
    const body = JSON.stringify({ typeName: s.typeName, payload: { name: 'plain' } });
    for (const type of ['text/plain', 'text/plain; charset=utf-8', 'application/xml']) {
      const r = await raw('POST', '/v1/records', body, type);
      expect(r.status, `${type}: ${r.text}`).toBe(415);
      expect(r.body.errorCode).toBe('UNSUPPORTED_MEDIA_TYPE');
      expect(r.body.requestId).toBe(r.headers.get('x-request-id'));
    }
    const rec = await createRecord({ typeName: s.typeName, payload: { name: 'json' } });
    expect(
      (await raw('PATCH', `/v1/records/${rec.id}`, JSON.stringify({ payload: { name: 'x' } }), 'text/plain')).status,
    ).toBe(415);
    const list = await api.get(`/v1/records?type=${s.typeName}`, root);
    expect(list.body.data.map((x: any) => x.payload.name)).toEqual(['json']);
  });
});

describe('__proto__ keys are a 400; constructor / prototype are ordinary names', () => {
  it.each([
    ['a payload key', (t: string) => `{"typeName":"${t}","payload":{"__proto__":{"name":"x"}}}`],
    ['a nested payload key', (t: string) => `{"typeName":"${t}","payload":{"obj":{"__proto__":{"a":1}}}}`],
    ['a top-level key', (t: string) => `{"typeName":"${t}","__proto__":{"status":"X"},"payload":{}}`],
    ['an escaped key', (t: string) => `{"typeName":"${t}","payload":{"\\u005f_proto__":{"name":"x"}}}`],
    ['a key inside an array', (t: string) => `{"typeName":"${t}","payload":{"list":[{"__proto__":{}}]}}`],
  ])('record create with __proto__ as %s → 400, nothing created', async (_, body) => {
    const s = await createSchema({ fields: [{ fieldId: 'name', fieldType: 'string' }] });
    expect400(await raw('POST', '/v1/records', body(s.typeName)));
    const list = await api.get(`/v1/records?type=${s.typeName}`, root);
    expect(list.body.data).toEqual([]);
  });

  it('record PUT / PATCH with __proto__ keys → 400, no new version', async () => {
    const s = await createSchema({ fields: [{ fieldId: 'name', fieldType: 'string' }] });
    const rec = await createRecord({ typeName: s.typeName, payload: { name: 'keep' } });
    const path = `/v1/records/${rec.id}`;
    const before = await snapshot(path);
    expect400(await raw('PATCH', path, '{"payload":{"__proto__":{"name":"evil"}}}'));
    expect400(await raw('PATCH', path, '{"__proto__":{"status":"X"}}'));
    expect400(await raw('PUT', path, '{"payload":{"name":"keep","__proto__":{"x":1}}}'));
    expect400(await raw('PATCH', path, '{"__proto__":{}}', 'application/merge-patch+json'));
    expect(await snapshot(path)).toEqual(before);
  });

  it('folder PATCH and schema create with a __proto__ key → 400', async () => {
    const f = await api.post('/v1/folders', root, { name: uniq('F') });
    const path = `/v1/folders/${f.body.id}`;
    const before = await snapshot(path);
    expect400(await raw('PATCH', path, '{"__proto__":{"name":"x"}}'));
    expect(await snapshot(path)).toEqual(before);
    expect400(
      await raw(
        'POST',
        '/v1/schemas',
        `{"typeName":"${uniq('S')}","displayName":"S","allowedSurfaces":["record"],` +
          '"renderHints":{"__proto__":{"label":"x"}}}',
      ),
    );
  });

  it('a field declared __proto__ is a 400 at schema write (no body could ever carry it)', async () => {
    expect400(
      await api.post('/v1/schemas', root, {
        typeName: uniq('S'),
        displayName: 'S',
        allowedSurfaces: ['record'],
        fields: [{ fieldId: '__proto__', fieldType: 'string' }],
      }),
    );
    expect400(
      await api.post('/v1/schemas', root, {
        typeName: uniq('S'),
        displayName: 'S',
        allowedSurfaces: ['record'],
        lookupFields: ['__proto__'],
      }),
    );
  });

  it('declared fields named constructor / toString are validated as own keys only', async () => {
    const s = await createSchema({
      fields: [
        { fieldId: 'constructor', fieldType: 'string' },
        { fieldId: 'toString', fieldType: 'number', sensitive: true },
        { fieldId: 'name', fieldType: 'string' },
      ],
      lookupFields: [{ fieldName: 'constructor', unique: true }],
    });
    // Absent: not confused with Object.prototype members (no type error, no masked value, no unique collision).
    const a = await createRecord({ typeName: s.typeName, payload: { name: 'a' } });
    expect(a.payload).toEqual({ name: 'a' });
    const b = await createRecord({ typeName: s.typeName, payload: { name: 'b' } });
    expect(b.payload).toEqual({ name: 'b' });
    // Present: validated, stored, sensitive masked, looked up.
    const c = await createRecord({ typeName: s.typeName, payload: { name: 'c', constructor: 'builder', toString: 7 } });
    expect(c.payload).toEqual({ name: 'c', constructor: 'builder', toString: '********' });
    expect400(await api.post('/v1/records', root, { typeName: s.typeName, payload: { constructor: 5 } }));
    const got = await api.get(`/v1/records/${a.id}`, root);
    expect(got.body.payload).toEqual({ name: 'a' });
    const l = await api.get(`/v1/records/lookup?type=${s.typeName}&field=constructor&value=builder`, root);
    expect(l.status, l.text).toBe(200);
    expect(l.body.data.map((x: { id: string }) => x.id)).toEqual([c.id]);
  });

  it('a required field named constructor is reported as required when absent', async () => {
    const s = await createSchema({ fields: [{ fieldId: 'constructor', fieldType: 'string', required: true }] });
    const r = await api.post('/v1/records', root, { typeName: s.typeName, payload: {} });
    expect400(r);
    expect(r.body.message).toMatch(/required/);
  });

  it('undeclared constructor / prototype keys pass like any undeclared key (bare and declared schemas)', async () => {
    const bare = await createSchema();
    const r1 = await createRecord({ typeName: bare.typeName, payload: { constructor: 'c', prototype: { a: 1 } } });
    expect(r1.payload).toEqual({ constructor: 'c', prototype: { a: 1 } });
    const p = await api.patch(`/v1/records/${r1.id}`, root, { payload: { constructor: null, prototype: { b: 2 } } });
    expect(p.status, p.text).toBe(200);
    expect(p.body.payload).toEqual({ prototype: { a: 1, b: 2 } });
    const typed = await createSchema({ fields: [{ fieldId: 'name', fieldType: 'string' }] });
    const r2 = await createRecord({
      typeName: typed.typeName,
      payload: { name: 'n', constructor: 'c', prototype: 'p' },
    });
    expect((await api.get(`/v1/records/${r2.id}`, root)).body.payload).toEqual({
      name: 'n',
      constructor: 'c',
      prototype: 'p',
    });
  });
});

describe('range lookups reject bad and inverted bounds', () => {
  let t: string;
  const ids: Record<string, string> = {};
  const lookup = (qs: string) => api.get(`/v1/records/lookup?type=${t}&${qs}`, root);

  beforeAll(async () => {
    const s = await createSchema({
      fields: [
        { fieldId: 'age', fieldType: 'number' },
        { fieldId: 'name', fieldType: 'string' },
        { fieldId: 'born', fieldType: 'date' },
        { fieldId: 'ok', fieldType: 'boolean' },
      ],
      lookupFields: [
        { fieldName: 'age', rangeEnabled: true },
        { fieldName: 'name', rangeEnabled: true },
        { fieldName: 'born', rangeEnabled: true },
        { fieldName: 'ok', rangeEnabled: true },
      ],
    });
    t = s.typeName;
    for (const [k, age, name, born] of [
      ['a', 1, 'ann', '2020-01-01'],
      ['b', 5, 'bob', '2021-06-01'],
      ['c', 10, 'cy', '2022-01-01'],
    ] as const)
      ids[k] = (await createRecord({ typeName: t, payload: { age, name, born, ok: age > 3 } })).id;
  });

  it.each([
    ['a non-number bound on a number field', 'field=age&from=a&to=5'],
    ['a non-number upper bound', 'field=age&from=1&to=z'],
    ['an inverted number range', 'field=age&from=10&to=1'],
    ['an out-of-range number', 'field=age&from=1e400&to=1e401'],
    ['an out-of-range upper bound', 'field=age&from=1&to=1e400'],
    ['a hex number', 'field=age&from=0x1&to=5'],
    ['an empty bound', 'field=age&from=&to=5'],
    ['an inverted string range', 'field=name&from=z&to=a'],
    ['an inverted date range', 'field=born&from=2022-01-01&to=2020-01-01'],
    ['a non-date bound', 'field=born&from=yesterday&to=2022-01-01'],
    ['a non-boolean bound', 'field=ok&from=no&to=true'],
  ])('%s → 400', async (_, qs) => {
    expect400(await lookup(qs));
  });

  it('the body variant rejects the same bounds', async () => {
    const post = (b: Record<string, unknown>) => api.post('/v1/records/lookup', root, { type: t, ...b });
    expect400(await post({ field: 'age', from: 'a', to: 5 }));
    expect400(await post({ field: 'age', from: 10, to: 1 }));
    expect400(await post({ field: 'age', from: '1e400', to: 5 }));
    expect400(await post({ field: 'name', from: 'z', to: 'a' }));
    expect400(await post({ field: 'name', from: 1, to: 5 }));
  });

  it('valid ranges keep working (inclusive, equal bounds, negative, decimals, exponents, dates)', async () => {
    const got = async (qs: string) => {
      const r = await lookup(qs);
      expect(r.status, r.text).toBe(200);
      return r.body.data.map((x: { id: string }) => x.id);
    };
    expect(await got('field=age&from=1&to=10')).toEqual([ids.a, ids.b, ids.c]);
    expect(await got('field=age&from=5&to=5')).toEqual([ids.b]);
    expect(await got('field=age&from=-100&to=4.5')).toEqual([ids.a]);
    expect(await got('field=age&from=2e0&to=1e1')).toEqual([ids.b, ids.c]);
    expect(await got('field=name&from=a&to=bz')).toEqual([ids.a, ids.b]);
    expect(await got('field=born&from=2021-01-01&to=2022-01-01')).toEqual([ids.b, ids.c]);
    expect(await got(`field=born&from=${Date.parse('2020-01-01')}&to=${Date.parse('2021-12-31')}`)).toEqual([
      ids.a,
      ids.b,
    ]);
    expect(await got('field=ok&from=false&to=true')).toHaveLength(3);
    const p = await api.post('/v1/records/lookup', root, { type: t, field: 'age', from: 5, to: 10 });
    expect(p.status, p.text).toBe(200);
    expect(p.body.data.map((x: { id: string }) => x.id)).toEqual([ids.b, ids.c]);
  });
});
