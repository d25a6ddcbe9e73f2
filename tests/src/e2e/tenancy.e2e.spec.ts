/**
 * Tenancy isolation, end to end.
 *
 * Acceptance: "a test with two accounts and two contexts shows no read, list, or
 * error message crossing a tenant or context boundary, for each credential kind."
 *
 * Layout. Two accounts, A (the bootstrap account) and B (made through the
 * operator API). Data lives in five "cells" — a tenant plus one of its contexts:
 *
 *   A.live.ctx1  A's live tenant, default context
 *   A.live.ctx2  A's live tenant, a second context (POST /v1/contexts)
 *   A.test       A's test tenant
 *   B.live       B's live tenant
 *   B.test       B's test tenant
 *
 * Every cell holds a schema with the same typeName (`Invoice`), a schema whose
 * typeName only that cell uses, a `u1` variant of `Invoice` (basedOn the base),
 * records (one with the same externalId in every cell, some owned by `u1` or
 * `u2`) and a deleted record whose tombstone remains. Each is written by every
 * credential of the cell that may write.
 *
 * Credential kinds: root live key, root test key (sk_), root key selecting a
 * context with x-context-id, scoped key (ssk_, also identity-bound and
 * cross-context), minted token (st_), identity-bound minted token (dataScope
 * userId 'u1') and the developer token (dt_, refused on the data plane), and tokens (JWTs) of the tenant's
 * own identity provider, plain or bound to 'u1' (claims `sub` and `svc_context`).
 *
 * Every entity a credential may not reach (another cell's, or out of its data
 * scope) must answer each by-id operation with a 404 that is byte-identical,
 * but for the requestId, to the 404 for a random id; lists must hold exactly
 * what the credential may see, on every page; error messages must not carry
 * another cell's ids, unique typeNames or externalIds.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LocalIssuer } from '../support/oidc-issuer';
import {
  eventually,
  OPERATOR_TOKEN,
  startService,
  type Api,
  type Bootstrap,
  type TestService,
} from '../support/service';

type CellId = 'A.live.ctx1' | 'A.live.ctx2' | 'A.test' | 'B.live' | 'B.test';
const CELL_IDS: CellId[] = ['A.live.ctx1', 'A.live.ctx2', 'A.test', 'B.live', 'B.test'];
type Kind = 'root-live' | 'root-test' | 'ssk' | 'ssk-cross' | 'ssk-u1' | 'st' | 'st-u1' | 'jwt' | 'jwt-u1';

/** The table of credentials: which kind acts in which cell. */
const PLAN: Array<[CellId, Kind]> = [
  ['A.live.ctx1', 'root-live'],
  ['A.live.ctx1', 'ssk'],
  ['A.live.ctx1', 'ssk-u1'],
  ['A.live.ctx1', 'st'],
  ['A.live.ctx1', 'st-u1'],
  ['A.live.ctx2', 'root-live'], // with x-context-id
  ['A.live.ctx2', 'ssk'],
  ['A.live.ctx2', 'ssk-cross'], // with x-context-id
  ['A.live.ctx2', 'st'],
  ['A.live.ctx2', 'st-u1'],
  ['A.live.ctx2', 'jwt'], // svc_context: the second context
  ['A.live.ctx2', 'jwt-u1'],
  ['A.test', 'root-test'],
  ['A.test', 'ssk'],
  ['A.test', 'st'],
  ['A.test', 'st-u1'],
  ['A.test', 'jwt'],
  ['B.live', 'root-live'],
  ['B.live', 'ssk'],
  ['B.live', 'st'],
  ['B.live', 'st-u1'],
  ['B.live', 'jwt-u1'],
  ['B.test', 'root-test'],
  ['B.test', 'st'],
];
const LABELS = PLAN.map(([cell, kind]) => `${cell}/${kind}`);
const credByLabel = (label: string) => {
  const c = creds.find((x) => `${x.cell}/${x.kind}` === label);
  if (!c) throw new Error(`no credential ${label}`);
  return c;
};

interface Cred {
  name: string;
  kind: Kind;
  cell: CellId;
  token: string;
  /** x-context-id, for a cross-context credential acting in a non-default context. */
  headers?: Record<string, string>;
  /** The identity the credential is bound to (dataScope.userId). */
  boundUser?: string;
  crossContext: boolean;
}

interface Rec {
  id: string;
  cell: CellId;
  userId: string | null;
  externalId: string | null;
  typeName: string;
}

interface Cell {
  id: CellId;
  tenantId: string;
  contextId: string;
  /** The contexts a cross-context credential of this tenant lists. */
  tenantContexts: string[];
  uniqueType: string;
  baseSchemaId: string;
  uniqueSchemaId: string;
  u1SchemaId?: string;
  records: Rec[];
  /** Deleted records: only their tombstone (and history) remain. */
  doomed: Rec[];
}

const TYPE = 'Invoice'; // the same typeName in every cell
const SHARED_EXT = 'inv-0001'; // the same externalId in every cell
const U1 = 'u1';
const U2 = 'u2';

let svc: TestService;
let api: Api;
let A: Bootstrap;
let B: Bootstrap;
let ctx2A: string;
/** One identity provider, registered for each tenant with its own audience. */
let idp: LocalIssuer;
const cells = {} as Record<CellId, Cell>;
const creds: Cred[] = [];
/** Responses of the setup writes that must be 201, for the independence test. */
const sharedCreates: Array<{ cell: CellId; what: string; status: number; id: string }> = [];

// ---------------------------------------------------------------- helpers

const call = (c: Pick<Cred, 'token' | 'headers'>, method: string, path: string, body?: unknown) =>
  api.call(method, path, { token: c.token, body, headers: c.headers });

/** The error body with its requestId taken out, as text, for byte comparisons. */
const withoutRequestId = (r: { text: string; body: any }) =>
  r.body?.requestId ? r.text.replace(JSON.stringify(r.body.requestId), '"<requestId>"') : r.text;

const short = () => randomUUID().slice(0, 8);

/** Runs `fns` with at most `n` in flight. */
async function pool<T>(n: number, fns: Array<() => Promise<T>>): Promise<T[]> {
  const out: T[] = new Array(fns.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(n, fns.length) }, async () => {
      while (next < fns.length) {
        const i = next++;
        out[i] = await fns[i]();
      }
    }),
  );
  return out;
}

const schemaBody = (typeName: string, extra: Record<string, unknown> = {}) => ({
  typeName,
  displayName: `${typeName} schema`,
  allowedSurfaces: ['record'],
  fields: [{ fieldId: 'amount', fieldType: 'number' }],
  ...extra,
});

const rootOf = (cell: CellId) =>
  creds.find((c) => c.cell === cell && (c.kind === 'root-live' || c.kind === 'root-test'))!;
const credsOf = (cell: CellId) => creds.filter((c) => c.cell === cell);

async function createRecord(c: Cred, body: Record<string, unknown>): Promise<Rec> {
  const r = await call(c, 'POST', '/v1/records', body);
  expect(r.status, `${c.name} POST /v1/records: ${r.text}`).toBe(201);
  const rec: Rec = {
    id: r.body.id,
    cell: c.cell,
    userId: r.body.userId,
    externalId: r.body.externalId,
    typeName: r.body.typeName,
  };
  cells[c.cell].records.push(rec);
  return rec;
}

/** Whether `c` may read record `r`: same tenant and context, and inside its data scope. */
const reaches = (c: Cred, r: Rec) => r.cell === c.cell && (!c.boundUser || r.userId === c.boundUser);

/** Follows nextCursor to the end; returns every id seen and the number of pages. */
async function allPages(c: Cred, path: string): Promise<{ ids: string[]; pages: number }> {
  const ids: string[] = [];
  let cursor: string | null = null;
  let pages = 0;
  do {
    const sep = path.includes('?') ? '&' : '?';
    const r = await call(c, 'GET', cursor ? `${path}${sep}startFrom=${encodeURIComponent(cursor)}` : path);
    expect(r.status, `${c.name} GET ${path}: ${r.text}`).toBe(200);
    expect(Object.keys(r.body).sort()).toEqual(['data', 'nextCursor']);
    ids.push(...r.body.data.map((x: { id: string }) => x.id));
    cursor = r.body.nextCursor;
    pages++;
    expect(pages, `${c.name} GET ${path}: too many pages`).toBeLessThan(100);
  } while (cursor !== null);
  return { ids, pages };
}

/** Strings that belong to cells other than `c`'s and must never appear in what `c` is told. */
function foreignSecrets(c: Cred): string[] {
  const own = cells[c.cell];
  const out = new Set<string>();
  for (const cell of Object.values(cells)) {
    if (cell.id === c.cell) continue;
    if (cell.tenantId !== own.tenantId) out.add(cell.tenantId);
    // a cross-context credential may know its own tenant's contexts (it lists them)
    if (!(c.crossContext && cell.tenantId === own.tenantId)) out.add(cell.contextId);
    out.add(cell.uniqueType);
    out.add(cell.baseSchemaId);
    out.add(cell.uniqueSchemaId);
    if (cell.u1SchemaId) out.add(cell.u1SchemaId);
    for (const r of [...cell.records, ...cell.doomed]) {
      out.add(r.id);
      if (r.externalId && r.externalId !== SHARED_EXT) out.add(r.externalId);
    }
  }
  return [...out];
}

function expectNoForeignStrings(c: Cred, what: string, text: string) {
  for (const s of foreignSecrets(c))
    expect(text.includes(s), `${c.name} ${what}: the response names ${s}: ${text}`).toBe(false);
}

// ---------------------------------------------------------------- set-up

beforeAll(async () => {
  svc = await startService();
  api = svc.api;
  A = svc.bootstrap;
  // Both accounts write far more in a minute than any plan's burst limit allows: a negotiated enterprise limit.
  const raised = await api.patch(`/operator/accounts/${A.accountId}`, OPERATOR_TOKEN, {
    rateLimitPerMinute: 1_000_000,
  });
  expect(raised.status, raised.text).toBe(200);
  B = await api.newAccount({ plan: 'enterprise', rateLimitPerMinute: 1_000_000 });

  idp = await LocalIssuer.start();
  const idpKey = await idp.addKey('RS256');
  for (const tenantId of [A.tenants.live.tenantId, A.tenants.test.tenantId, B.tenants.live.tenantId]) {
    const r = await api.call('PUT', `/operator/tenants/${tenantId}/jwt-issuers`, {
      token: OPERATOR_TOKEN,
      body: { issuers: [{ issuer: idp.url, audience: `tenancy-${tenantId}` }] },
    });
    expect(r.status, r.text).toBe(200);
  }

  const c2 = await api.post('/v1/contexts', A.tenants.live.rootKey, { name: 'second' });
  expect(c2.status, c2.text).toBe(201);
  ctx2A = c2.body.id;

  const place = (id: CellId, tenantId: string, contextId: string, tenantContexts: string[]): Cell => ({
    id,
    tenantId,
    contextId,
    tenantContexts,
    uniqueType: `${id.replace(/\./g, '_')}_only_${short()}`,
    baseSchemaId: '',
    uniqueSchemaId: '',
    records: [],
    doomed: [],
  });
  cells['A.live.ctx1'] = place('A.live.ctx1', A.tenants.live.tenantId, A.tenants.live.contextId, [
    A.tenants.live.contextId,
    ctx2A,
  ]);
  cells['A.live.ctx2'] = place('A.live.ctx2', A.tenants.live.tenantId, ctx2A, [A.tenants.live.contextId, ctx2A]);
  cells['A.test'] = place('A.test', A.tenants.test.tenantId, A.tenants.test.contextId, [A.tenants.test.contextId]);
  cells['B.live'] = place('B.live', B.tenants.live.tenantId, B.tenants.live.contextId, [B.tenants.live.contextId]);
  cells['B.test'] = place('B.test', B.tenants.test.tenantId, B.tenants.test.contextId, [B.tenants.test.contextId]);

  // The credentials of the table, in order: root keys, scoped keys from each
  // account's developer token, tokens minted by the cell's root key.
  const devOf = (cell: CellId) => (cell.startsWith('A') ? A.developerToken : B.developerToken);
  const rootKeyOf = (cell: CellId) =>
    ({
      'A.live.ctx1': A.tenants.live.rootKey,
      'A.live.ctx2': A.tenants.live.rootKey,
      'A.test': A.tenants.test.rootKey,
      'B.live': B.tenants.live.rootKey,
      'B.test': B.tenants.test.rootKey,
    })[cell];
  for (const [cell, kind] of PLAN) {
    const cl = cells[cell];
    const isDefault = cl.contextId === cl.tenantContexts[0];
    const selector = { 'x-context-id': cl.contextId };
    if (kind === 'root-live' || kind === 'root-test') {
      creds.push({
        name: `${cell}/${kind}${isDefault ? '' : '+x-context-id'}`,
        kind,
        cell,
        token: rootKeyOf(cell),
        headers: isDefault ? undefined : selector,
        crossContext: true,
      });
    } else if (kind === 'ssk' || kind === 'ssk-u1' || kind === 'ssk-cross') {
      const body: Record<string, unknown> = { tenantId: cl.tenantId, allowedActions: ['*'] };
      if (kind === 'ssk-cross') body.crossContext = true;
      else body.contextId = cl.contextId;
      if (kind === 'ssk-u1') body.dataScope = { userId: U1 };
      const r = await api.post('/developer/keys', devOf(cell), body);
      expect(r.status, r.text).toBe(201);
      expect(r.body.key.startsWith('ssk_')).toBe(true);
      const cross = kind === 'ssk-cross';
      creds.push({
        name: `${cell}/${kind}${cross ? '+x-context-id' : ''}`,
        kind,
        cell,
        token: r.body.key,
        headers: cross ? selector : undefined,
        boundUser: kind === 'ssk-u1' ? U1 : undefined,
        crossContext: cross,
      });
    } else if (kind === 'jwt' || kind === 'jwt-u1') {
      const claims = {
        aud: `tenancy-${cl.tenantId}`,
        svc_context: cl.contextId,
        svc_permissions: ['records:*', 'schemas:*'],
        exp: Math.floor(Date.now() / 1000) + 3 * 3600,
      };
      const token = await idp.sign(idpKey, kind === 'jwt-u1' ? { ...claims, sub: U1 } : claims);
      creds.push({
        name: `${cell}/${kind}`,
        kind,
        cell,
        token,
        boundUser: kind === 'jwt-u1' ? U1 : undefined,
        crossContext: false,
      });
    } else {
      const scope = {
        allowedActions: ['records:*', 'schemas:*'],
        ...(kind === 'st-u1' ? { dataScope: { userId: U1 } } : {}),
      };
      const r = await api.post('/v1/tokens', rootKeyOf(cell), { scope, contextId: cl.contextId });
      expect(r.status, r.text).toBe(201);
      expect(r.body.token.startsWith('st_')).toBe(true);
      expect(r.body.contextId).toBe(cl.contextId);
      creds.push({
        name: `${cell}/${kind}`,
        kind,
        cell,
        token: r.body.token,
        boundUser: kind === 'st-u1' ? U1 : undefined,
        crossContext: false,
      });
    }
  }

  // Schemas and records, cell by cell, through every credential that may write.
  for (const id of CELL_IDS) {
    const cell = cells[id];
    const r0 = rootOf(id);

    const base = await call(r0, 'POST', '/v1/schemas', schemaBody(TYPE));
    expect(base.status, base.text).toBe(201);
    cell.baseSchemaId = base.body.id;
    sharedCreates.push({ cell: id, what: `schema ${TYPE}`, status: base.status, id: base.body.id });

    const uniq = await call(r0, 'POST', '/v1/schemas', schemaBody(cell.uniqueType));
    expect(uniq.status, uniq.text).toBe(201);
    cell.uniqueSchemaId = uniq.body.id;

    for (const c of credsOf(id).filter((x) => x !== r0)) {
      if (!c.boundUser) {
        // Idempotent by typeName within the same (unscoped) ownership: the same base comes back.
        const again = await call(c, 'POST', '/v1/schemas', schemaBody(TYPE));
        expect(again.status, `${c.name}: ${again.text}`).toBe(200);
        expect(again.body.id).toBe(cell.baseSchemaId);
      } else {
        // An identity-bound credential authors its own variant of the shared base.
        const v = await call(c, 'POST', '/v1/schemas', schemaBody(TYPE, { basedOn: cell.baseSchemaId }));
        expect([200, 201], `${c.name}: ${v.text}`).toContain(v.status);
        expect(v.body.userId).toBe(U1);
        if (cell.u1SchemaId) expect(v.body.id).toBe(cell.u1SchemaId);
        cell.u1SchemaId = v.body.id;
      }
    }

    const shared = await createRecord(r0, { typeName: TYPE, externalId: SHARED_EXT, payload: { amount: 1 } });
    sharedCreates.push({ cell: id, what: `record ${TYPE}/${SHARED_EXT}`, status: 201, id: shared.id });
    await createRecord(r0, {
      typeName: TYPE,
      userId: U1,
      externalId: `ext-${id}-u1-${short()}`,
      payload: { amount: 2 },
    });
    await createRecord(r0, {
      typeName: TYPE,
      userId: U2,
      scopes: ['org:acme'],
      externalId: `ext-${id}-u2-${short()}`,
      payload: { amount: 3 },
    });
    await createRecord(r0, {
      typeName: cell.uniqueType,
      externalId: `ext-${id}-uniq-${short()}`,
      payload: { amount: 4 },
    });
    for (const c of credsOf(id).filter((x) => x !== r0)) {
      const rec = await createRecord(c, {
        typeName: TYPE,
        externalId: `ext-${id}-${c.kind}-${short()}`,
        payload: { amount: 5 },
      });
      // An identity-bound credential stamps its userId on every write.
      expect(rec.userId, c.name).toBe(c.boundUser ?? null);
    }

    // A record that is deleted; its tombstone remains.
    const gone = await call(r0, 'POST', '/v1/records', {
      typeName: TYPE,
      externalId: `ext-${id}-doomed-${short()}`,
      payload: { amount: 6 },
    });
    expect(gone.status, gone.text).toBe(201);
    const del = await call(r0, 'DELETE', `/v1/records/${gone.body.id}`);
    expect(del.status, del.text).toBe(204);
    cell.doomed.push({ id: gone.body.id, cell: id, userId: null, externalId: gone.body.externalId, typeName: TYPE });
  }

  // History is written asynchronously: wait until every owner sees it, so that
  // the 404s below are real refusals and not rows that were not there yet.
  await Promise.all(
    CELL_IDS.map(async (id) => {
      const r0 = rootOf(id);
      const cell = cells[id];
      for (const r of cell.records)
        await eventually(async () => (await call(r0, 'GET', `/v1/records/${r.id}/versions`)).body?.data?.length > 0);
      for (const s of [cell.baseSchemaId, cell.uniqueSchemaId])
        await eventually(async () => (await call(r0, 'GET', `/v1/schemas/${s}/versions`)).body?.data?.length > 0);
      for (const r of cell.doomed)
        await eventually(async () => (await call(r0, 'GET', `/v1/records/${r.id}/tombstone`)).status === 200);
    }),
  );
}, 180_000);

afterAll(async () => {
  await svc?.stop();
  await idp?.close();
});

// ---------------------------------------------------------------- tests

describe('set-up sanity', () => {
  it('covers every credential kind in both accounts, live and test, and both contexts of A', () => {
    const kinds = new Set(creds.map((c) => c.kind));
    for (const k of ['root-live', 'root-test', 'ssk', 'ssk-cross', 'ssk-u1', 'st', 'st-u1', 'jwt', 'jwt-u1'] as Kind[])
      expect(kinds.has(k), k).toBe(true);
    for (const cell of CELL_IDS) expect(credsOf(cell).length, cell).toBeGreaterThanOrEqual(2);
    expect(new Set(creds.filter((c) => c.kind === 'st-u1').map((c) => c.cell))).toEqual(
      new Set(['A.live.ctx1', 'A.live.ctx2', 'A.test', 'B.live']),
    );
  });

  it('each owner reads its own records, schemas, versions, tombstones (so the 404s below mean something)', async () => {
    for (const c of creds) {
      for (const r of cells[c.cell].records.filter((r) => reaches(c, r))) {
        const g = await call(c, 'GET', `/v1/records/${r.id}`);
        expect(g.status, `${c.name} GET own record: ${g.text}`).toBe(200);
        expect(g.body.id).toBe(r.id);
      }
      const s = await call(c, 'GET', `/v1/schemas/${cells[c.cell].baseSchemaId}`);
      expect(s.status, `${c.name} GET own schema: ${s.text}`).toBe(200);
      if (!c.boundUser)
        for (const d of cells[c.cell].doomed) {
          const t = await call(c, 'GET', `/v1/records/${d.id}/tombstone`);
          expect(t.status, `${c.name} GET own tombstone: ${t.text}`).toBe(200);
          expect(t.body.externalId).toBe(d.externalId);
        }
    }
  });
});

describe('the same typeName and externalId in every tenant and context are independent', () => {
  it(`each cell created its own "${TYPE}" schema and its own "${SHARED_EXT}" record (201), with different ids`, () => {
    const schemas = sharedCreates.filter((x) => x.what.startsWith('schema'));
    const records = sharedCreates.filter((x) => x.what.startsWith('record'));
    expect(schemas).toHaveLength(CELL_IDS.length);
    expect(records).toHaveLength(CELL_IDS.length);
    for (const x of sharedCreates) expect(x.status, `${x.cell} ${x.what}`).toBe(201);
    expect(new Set(schemas.map((x) => x.id)).size).toBe(CELL_IDS.length);
    expect(new Set(records.map((x) => x.id)).size).toBe(CELL_IDS.length);
  });

  it('re-sending the shared externalId answers, in each cell, with that cell’s own record', async () => {
    for (const id of CELL_IDS) {
      const mine = cells[id].records.find((r) => r.externalId === SHARED_EXT)!;
      const r = await call(rootOf(id), 'POST', '/v1/records', {
        typeName: TYPE,
        externalId: SHARED_EXT,
        payload: { amount: 1 },
      });
      expect(r.status, `${id}: ${r.text}`).toBe(200);
      expect(r.body.id).toBe(mine.id);
    }
  });

  it('a new typeName and externalId created in one cell first can still be created in every other', async () => {
    const typeName = `Fresh_${short()}`;
    const ext = `fresh-${short()}`;
    const ids: string[] = [];
    for (const id of CELL_IDS) {
      const s = await call(rootOf(id), 'POST', '/v1/schemas', schemaBody(typeName));
      expect(s.status, `${id}: ${s.text}`).toBe(201);
      const r = await call(rootOf(id), 'POST', '/v1/records', { typeName, externalId: ext, payload: { amount: 7 } });
      expect(r.status, `${id}: ${r.text}`).toBe(201);
      ids.push(s.body.id, r.body.id);
      // clean up so the list expectations below stay exact
      expect((await call(rootOf(id), 'DELETE', `/v1/records/${r.body.id}`)).status).toBe(204);
      expect((await call(rootOf(id), 'DELETE', `/v1/schemas/${s.body.id}`)).status).toBe(204);
    }
    expect(new Set(ids).size).toBe(ids.length);
  });
});

describe('by-id operations on entities a credential may not reach → 404, byte-identical to a random id', () => {
  /** The 404 a credential gets for a random id, per operation, to compare against. */
  async function baselines(c: Cred) {
    const rnd = randomUUID();
    const ops = operations(rnd);
    const out: Record<string, { status: number; text: string; ct: string | null }> = {};
    for (const [name, [method, path, body]] of Object.entries(ops)) {
      const r = await call(c, method, path, body);
      expect(r.status, `${c.name} ${method} ${path} (random id): ${r.text}`).toBe(404);
      out[name] = { status: r.status, text: withoutRequestId(r), ct: r.headers.get('content-type') };
    }
    return out;
  }

  const operations = (id: string): Record<string, [string, string, unknown?]> => ({
    'GET record': ['GET', `/v1/records/${id}`],
    'GET record versions': ['GET', `/v1/records/${id}/versions`],
    'GET record tombstone': ['GET', `/v1/records/${id}/tombstone`],
    'PUT record': ['PUT', `/v1/records/${id}`, { payload: { amount: 99 } }],
    'PATCH record': ['PATCH', `/v1/records/${id}`, { status: 'HIJACKED', payload: { amount: 98 } }],
    'DELETE record': ['DELETE', `/v1/records/${id}`],
    'GET schema': ['GET', `/v1/schemas/${id}`],
    'GET schema versions': ['GET', `/v1/schemas/${id}/versions`],
    'PUT schema': ['PUT', `/v1/schemas/${id}`, { displayName: 'hijacked' }],
    'DELETE schema': ['DELETE', `/v1/schemas/${id}`],
  });

  const RECORD_OPS = ['GET record', 'GET record versions', 'PUT record', 'PATCH record', 'DELETE record'];
  const DOOMED_OPS = [
    'GET record',
    'GET record versions',
    'GET record tombstone',
    'PUT record',
    'PATCH record',
    'DELETE record',
  ];
  const SCHEMA_OPS = ['GET schema', 'GET schema versions', 'PUT schema', 'DELETE schema'];

  it.each(LABELS)('%s', async (label) => {
    const c = credByLabel(label);
    const base = await baselines(c);
    const probes: Array<[string, string, string]> = []; // [op, entity id, what]
    for (const cell of Object.values(cells)) {
      for (const r of cell.records)
        if (!reaches(c, r))
          for (const op of RECORD_OPS) probes.push([op, r.id, `${cell.id} record (userId ${r.userId})`]);
      for (const r of cell.doomed)
        if (!reaches(c, r)) for (const op of DOOMED_OPS) probes.push([op, r.id, `${cell.id} deleted record`]);
      if (cell.id !== c.cell)
        for (const s of [cell.baseSchemaId, cell.uniqueSchemaId, cell.u1SchemaId].filter(Boolean) as string[])
          for (const op of SCHEMA_OPS) probes.push([op, s, `${cell.id} schema`]);
    }
    expect(probes.length).toBeGreaterThan(50);
    const failures: string[] = [];
    await pool(
      8,
      probes.map(([op, id, what]) => async () => {
        const [method, path, body] = operations(id)[op];
        const r = await call(c, method, path, body);
        const text = withoutRequestId(r);
        if (r.status !== 404) failures.push(`${op} on ${what} ${id} → ${r.status} ${r.text}`);
        else if (text !== base[op].text)
          failures.push(`${op} on ${what} ${id}: body ${text} differs from the random-id body ${base[op].text}`);
        else if (r.headers.get('content-type') !== base[op].ct)
          failures.push(`${op} on ${what} ${id}: content-type differs`);
        for (const s of foreignSecrets(c))
          if (r.text.includes(s)) failures.push(`${op} on ${what} ${id}: the response names ${s}`);
      }),
    );
    expect(failures, `${c.name}:\n${failures.join('\n')}`).toEqual([]);
  });

  it('after all the refused writes, every record and schema is unchanged for its owner', async () => {
    for (const id of CELL_IDS) {
      const r0 = rootOf(id);
      for (const r of cells[id].records) {
        const g = await call(r0, 'GET', `/v1/records/${r.id}`);
        expect(g.status, `${id} ${r.id}: ${g.text}`).toBe(200);
        expect(g.body.version).toBe(1);
        expect(g.body.status).not.toBe('HIJACKED');
      }
      for (const s of [cells[id].baseSchemaId, cells[id].uniqueSchemaId]) {
        const g = await call(r0, 'GET', `/v1/schemas/${s}`);
        expect(g.status).toBe(200);
        expect(g.body.displayName).not.toBe('hijacked');
        expect(g.body.schemaVersion).toBe(1);
      }
    }
  });
});

describe('lists never cross a tenant, context or data-scope boundary (every page)', () => {
  it.each(LABELS)('%s', async (label) => {
    const c = credByLabel(label);
    const cell = cells[c.cell];
    const visible = cell.records.filter((r) => reaches(c, r));
    const sorted = (xs: string[]) => [...xs].sort();

    // GET /v1/records: exactly the records the credential may read, each once, over small pages.
    const all = await allPages(c, '/v1/records?limit=2');
    expect(sorted(all.ids), `${c.name} /v1/records`).toEqual(sorted(visible.map((r) => r.id)));
    expect(new Set(all.ids).size).toBe(all.ids.length);
    if (visible.length > 2) expect(all.pages).toBeGreaterThan(1);

    // ?type= the shared typeName: this cell's only.
    const typed = await allPages(c, `/v1/records?type=${TYPE}&limit=3`);
    expect(sorted(typed.ids), `${c.name} /v1/records?type=${TYPE}`).toEqual(
      sorted(visible.filter((r) => r.typeName === TYPE).map((r) => r.id)),
    );

    // ?type= a typeName only another cell uses: nothing.
    for (const other of Object.values(cells).filter((x) => x.id !== c.cell)) {
      const r = await call(c, 'GET', `/v1/records?type=${other.uniqueType}`);
      expect(r.status, r.text).toBe(200);
      expect(r.body.data, `${c.name} ?type=${other.uniqueType}`).toEqual([]);
      expect(r.body.nextCursor).toBeNull();
    }
    // ?type= its own unique typeName: its own record, when in scope.
    const mineU = await allPages(c, `/v1/records?type=${cell.uniqueType}`);
    expect(sorted(mineU.ids)).toEqual(sorted(visible.filter((r) => r.typeName === cell.uniqueType).map((r) => r.id)));

    // GET /v1/schemas: this context's schemas only.
    const schemas = await allPages(c, '/v1/schemas?limit=1');
    const own = [cell.baseSchemaId, cell.uniqueSchemaId, cell.u1SchemaId].filter(Boolean) as string[];
    for (const s of schemas.ids) expect(own, `${c.name} lists schema ${s} that is not its context's`).toContain(s);
    expect(schemas.ids).toEqual(expect.arrayContaining([cell.baseSchemaId]));
    if (!c.boundUser) expect(sorted(schemas.ids)).toEqual(sorted(own));

    // GET /v1/contexts: its tenant's contexts (cross-context) or its own only.
    const contexts = await allPages(c, '/v1/contexts?limit=1');
    expect(sorted(contexts.ids), `${c.name} /v1/contexts`).toEqual(
      sorted(c.crossContext ? cell.tenantContexts : [cell.contextId]),
    );

    // And no page named anything of another cell.
    for (const path of [
      '/v1/records?limit=100&includePayload=true',
      '/v1/schemas?limit=100',
      '/v1/contexts?limit=100',
    ]) {
      const r = await call(c, 'GET', path);
      expectNoForeignStrings(c, `GET ${path}`, r.text);
    }
  });

  it(
    'a list cursor issued to one tenant or context is refused (400) in another, and names nothing of the ' + 'issuer',
    async () => {
      const issuer = rootOf('A.live.ctx1');
      const first = await call(issuer, 'GET', '/v1/records?limit=1');
      const cursor: string = first.body.nextCursor;
      expect(cursor).toEqual(expect.any(String));
      for (const other of ['A.live.ctx2', 'A.test', 'B.live', 'B.test'] as CellId[]) {
        for (const c of credsOf(other)) {
          const r = await call(c, 'GET', `/v1/records?limit=1&startFrom=${encodeURIComponent(cursor)}`);
          expect(r.status, `${c.name}: ${r.text}`).toBe(400);
          expect(r.body.errorCode).toBe('INVALID_CURSOR');
          expectNoForeignStrings(c, 'foreign cursor', r.text);
        }
      }
    },
  );
});

describe('live and test tenants are separate', () => {
  it('a live root key cannot read, list or select test-tenant data; a test root key cannot for live data', async () => {
    for (const acct of ['A', 'B'] as const) {
      const live = rootOf(acct === 'A' ? 'A.live.ctx1' : 'B.live');
      const test = rootOf(acct === 'A' ? 'A.test' : 'B.test');
      for (const [c, other] of [
        [live, cells[test.cell]],
        [test, cells[live.cell]],
      ] as const) {
        for (const r of other.records)
          expect((await call(c, 'GET', `/v1/records/${r.id}`)).status, `${c.name} → ${other.id}`).toBe(404);
        expect((await call(c, 'GET', `/v1/schemas/${other.baseSchemaId}`)).status).toBe(404);
        const list = await allPages(c, '/v1/records?limit=100');
        expect(list.ids.some((id) => other.records.some((r) => r.id === id))).toBe(false);
        const sel = await api.get('/v1/records', c.token, { 'x-context-id': other.contextId });
        expect(sel.status, `${c.name} x-context-id ${other.id}`).toBe(404);
      }
    }
  });

  it('a live root key cannot mint a token for its test tenant’s context (404, same as a random context)', async () => {
    const live = rootOf('A.live.ctx1');
    const a = await api.post('/v1/tokens', live.token, {
      scope: { allowedActions: ['records:r'] },
      contextId: cells['A.test'].contextId,
    });
    const b = await api.post('/v1/tokens', live.token, {
      scope: { allowedActions: ['records:r'] },
      contextId: randomUUID(),
    });
    expect(a.status).toBe(404);
    expect(withoutRequestId(a)).toBe(withoutRequestId(b));
  });
});

describe('app contexts inside one tenant', () => {
  const rec = (cell: CellId) => cells[cell].records.find((r) => r.externalId === SHARED_EXT)!;

  it('a token minted for context 2 does not see context 1 records, and the reverse', async () => {
    const t1 = creds.find((c) => c.cell === 'A.live.ctx1' && c.kind === 'st')!;
    const t2 = creds.find((c) => c.cell === 'A.live.ctx2' && c.kind === 'st')!;
    expect((await call(t2, 'GET', `/v1/records/${rec('A.live.ctx1').id}`)).status).toBe(404);
    expect((await call(t1, 'GET', `/v1/records/${rec('A.live.ctx2').id}`)).status).toBe(404);
    expect((await call(t1, 'GET', `/v1/records/${rec('A.live.ctx1').id}`)).status).toBe(200);
    expect((await call(t2, 'GET', `/v1/records/${rec('A.live.ctx2').id}`)).status).toBe(200);
  });

  it('a confined token cannot reach the other context with x-context-id (404, same as a random id)', async () => {
    const t1 = creds.find((c) => c.cell === 'A.live.ctx1' && c.kind === 'st')!;
    const a = await api.get(`/v1/records/${rec('A.live.ctx2').id}`, t1.token, { 'x-context-id': ctx2A });
    const b = await api.get(`/v1/records/${rec('A.live.ctx2').id}`, t1.token, { 'x-context-id': randomUUID() });
    expect(a.status).toBe(404);
    expect(withoutRequestId(a)).toBe(withoutRequestId(b));
    const k = creds.find((c) => c.cell === 'A.live.ctx1' && c.kind === 'ssk')!;
    expect((await api.get('/v1/records', k.token, { 'x-context-id': ctx2A })).status).toBe(404);
  });

  it(
    'GET /v1/ping answers where each credential lands: its tenant, context and environment; no credential ' + 'is 401',
    async () => {
      const t2 = creds.find((c) => c.cell === 'A.live.ctx2' && c.kind === 'st')!;
      expect((await api.get('/v1/ping', t2.token)).body).toEqual({
        status: 'ok',
        tenantId: A.tenants.live.tenantId,
        contextId: ctx2A,
        livemode: true,
      });
      expect((await api.get('/v1/ping', A.tenants.live.rootKey, { 'x-context-id': ctx2A })).body.contextId).toBe(ctx2A);
      expect((await api.get('/v1/ping', B.tenants.test.rootKey)).body).toEqual({
        status: 'ok',
        tenantId: B.tenants.test.tenantId,
        contextId: B.tenants.test.contextId,
        livemode: false,
      });
      expect((await api.unchecked.get('/v1/ping', '')).status).toBe(401);
    },
  );

  it('the root key sees context 2 only with x-context-id, and then not context 1', async () => {
    const root = A.tenants.live.rootKey;
    const r2 = rec('A.live.ctx2').id;
    const r1 = rec('A.live.ctx1').id;
    expect((await api.get(`/v1/records/${r2}`, root)).status).toBe(404);
    expect((await api.get(`/v1/records/${r2}`, root, { 'x-context-id': ctx2A })).status).toBe(200);
    expect((await api.get(`/v1/records/${r1}`, root, { 'x-context-id': ctx2A })).status).toBe(404);
    expect((await api.get(`/v1/records/${r1}`, root, { 'x-context-id': A.tenants.live.contextId })).status).toBe(200);
    const plain = await allPages(
      { name: 'root', kind: 'root-live', cell: 'A.live.ctx1', token: root, crossContext: true },
      '/v1/records?limit=100',
    );
    expect(plain.ids).not.toContain(r2);
    expect(plain.ids).toContain(r1);
  });

  it('a cross-context ssk_ key also picks the context with x-context-id, and the default one without it', async () => {
    const k = creds.find((c) => c.kind === 'ssk-cross')!;
    expect((await api.get(`/v1/records/${rec('A.live.ctx2').id}`, k.token)).status).toBe(404);
    expect((await api.get(`/v1/records/${rec('A.live.ctx1').id}`, k.token)).status).toBe(200);
    expect((await api.get(`/v1/records/${rec('A.live.ctx2').id}`, k.token, { 'x-context-id': ctx2A })).status).toBe(
      200,
    );
    // but not another tenant's context
    expect((await api.get('/v1/records', k.token, { 'x-context-id': B.tenants.live.contextId })).status).toBe(404);
  });

  it('another account’s root key selecting a context of A by x-context-id gets a random context’s 404', async () => {
    const rootB = B.tenants.live.rootKey;
    const a = await api.get('/v1/records', rootB, { 'x-context-id': ctx2A });
    const b = await api.get('/v1/records', rootB, { 'x-context-id': randomUUID() });
    expect(a.status).toBe(404);
    expect(withoutRequestId(a)).toBe(withoutRequestId(b));
    const c = await api.get('/v1/records', rootB, { 'x-context-id': A.tenants.live.contextId });
    expect(withoutRequestId(c)).toBe(withoutRequestId(b));
  });
});

describe('identity-bound credentials (dataScope.userId = u1)', () => {
  const bound = () => creds.filter((c) => c.boundUser === U1);

  it('there is one per live/test tenant and context (st_ and ssk_), and JWTs bound by their sub claim', () => {
    expect(
      bound()
        .map((c) => c.name)
        .sort(),
    ).toEqual([
      'A.live.ctx1/ssk-u1',
      'A.live.ctx1/st-u1',
      'A.live.ctx2/jwt-u1',
      'A.live.ctx2/st-u1',
      'A.test/st-u1',
      'B.live/jwt-u1',
      'B.live/st-u1',
    ]);
  });

  it('lists only records with userId u1, and ?userId=u2 is empty', async () => {
    for (const c of bound()) {
      const l = await allPages(c, '/v1/records?limit=2');
      const expected = cells[c.cell].records.filter((r) => r.userId === U1).map((r) => r.id);
      expect(expected.length).toBeGreaterThanOrEqual(2);
      expect([...l.ids].sort(), c.name).toEqual([...expected].sort());
      const u2 = await call(c, 'GET', `/v1/records?userId=${U2}`);
      expect(u2.status).toBe(200);
      expect(u2.body.data).toEqual([]);
      const u1 = await allPages(c, `/v1/records?userId=${U1}&limit=100`);
      expect([...u1.ids].sort()).toEqual([...expected].sort());
    }
  });

  it('a write without userId is stamped u1; a write naming u1 is accepted', async () => {
    for (const c of bound()) {
      const a = await createRecord(c, { typeName: TYPE, payload: { amount: 10 } });
      expect(a.userId, c.name).toBe(U1);
      const b = await createRecord(c, { typeName: TYPE, userId: U1, payload: { amount: 11 } });
      expect(b.userId, c.name).toBe(U1);
      const g = await call(rootOf(c.cell), 'GET', `/v1/records/${a.id}`);
      expect(g.body.userId).toBe(U1);
    }
  });

  it('a write naming userId u2 is a 403 (create, PUT and PATCH), and nothing changes', async () => {
    for (const c of bound()) {
      const before = (await call(c, 'GET', '/v1/records?limit=100')).body.data.length;
      const create = await call(c, 'POST', '/v1/records', { typeName: TYPE, userId: U2, payload: { amount: 12 } });
      expect(create.status, `${c.name} create: ${create.text}`).toBe(403);
      expect(create.body.errorCode).toBe('FORBIDDEN');
      const mine = cells[c.cell].records.find((r) => r.userId === U1)!;
      const put = await call(c, 'PUT', `/v1/records/${mine.id}`, { userId: U2, payload: { amount: 13 } });
      expect(put.status, `${c.name} PUT: ${put.text}`).toBe(403);
      const patch = await call(c, 'PATCH', `/v1/records/${mine.id}`, { userId: U2 });
      expect(patch.status, `${c.name} PATCH: ${patch.text}`).toBe(403);
      const g = await call(rootOf(c.cell), 'GET', `/v1/records/${mine.id}`);
      expect(g.body.userId).toBe(U1);
      expect((await call(c, 'GET', '/v1/records?limit=100')).body.data.length).toBe(before);
      // the root key of the tenant still may (it is not identity-bound)
      const u2 = await call(rootOf(c.cell), 'GET', `/v1/records?userId=${U2}`);
      expect(u2.body.data.length).toBeGreaterThan(0);
    }
  });

  it('an update by an identity-bound credential keeps userId u1', async () => {
    for (const c of bound()) {
      const mine = cells[c.cell].records.find((r) => r.userId === U1)!;
      const p = await call(c, 'PATCH', `/v1/records/${mine.id}`, { payload: { amount: 20 } });
      expect(p.status, `${c.name}: ${p.text}`).toBe(200);
      expect(p.body.userId).toBe(U1);
      const q = await call(c, 'PUT', `/v1/records/${mine.id}`, { payload: { amount: 21 } });
      expect(q.status, `${c.name}: ${q.text}`).toBe(200);
      expect(q.body.userId).toBe(U1);
    }
  });

  it('a token minted by an identity-bound token cannot widen to another user (403)', async () => {
    const c = creds.find((x) => x.kind === 'st-u1' && x.cell === 'A.live.ctx1')!;
    const r = await call(c, 'POST', '/v1/tokens', {
      scope: { allowedActions: ['records:r'], dataScope: { userId: U2 } },
    });
    expect(r.status, r.text).toBe(403);
    const ok = await call(c, 'POST', '/v1/tokens', { scope: { allowedActions: ['records:r'] } });
    expect(ok.status, ok.text).toBe(201);
    const child = { ...c, token: ok.body.token, name: 'child of st-u1' };
    const l = await allPages(child, '/v1/records?limit=100');
    for (const id of l.ids) expect(cells['A.live.ctx1'].records.find((r) => r.id === id)?.userId).toBe(U1);
  });
});

describe('error messages never name what belongs to another tenant or context', () => {
  it('creating a record with another cell’s schemaId → 404, identical to a random schemaId', async () => {
    for (const c of creds.filter((x) => !x.boundUser)) {
      const rnd = await call(c, 'POST', '/v1/records', { schemaId: randomUUID(), payload: { amount: 1 } });
      expect(rnd.status, `${c.name}: ${rnd.text}`).toBe(404);
      for (const other of Object.values(cells).filter((x) => x.id !== c.cell)) {
        const r = await call(c, 'POST', '/v1/records', { schemaId: other.baseSchemaId, payload: { amount: 1 } });
        expect(r.status, `${c.name} with ${other.id}'s schema: ${r.text}`).toBe(404);
        expect(withoutRequestId(r)).toBe(withoutRequestId(rnd));
      }
    }
  });

  it('creating a record with a typeName only another cell uses answers as for a typeName nobody uses', async () => {
    for (const c of creds) {
      const never = `Never_${short()}`;
      const rnd = await call(c, 'POST', '/v1/records', { typeName: never, externalId: 'x-1', payload: { amount: 1 } });
      expect(rnd.status, `${c.name}: ${rnd.text}`).toBe(404);
      for (const other of Object.values(cells).filter((x) => x.id !== c.cell)) {
        const r = await call(c, 'POST', '/v1/records', {
          typeName: other.uniqueType,
          externalId: 'x-1',
          payload: { amount: 1 },
        });
        expect(r.status, `${c.name} with ${other.uniqueType}: ${r.text}`).toBe(rnd.status);
        expect(withoutRequestId(r).replaceAll(other.uniqueType, '<T>')).toBe(
          withoutRequestId(rnd).replaceAll(never, '<T>'),
        );
      }
    }
  });

  it('authoring a variant schema basedOn another cell’s base names only the caller’s own base', async () => {
    for (const c of creds.filter((x) => x.boundUser)) {
      for (const other of Object.values(cells).filter((x) => x.id !== c.cell)) {
        const r = await call(c, 'POST', '/v1/schemas', schemaBody(TYPE, { basedOn: other.baseSchemaId }));
        // The caller's own variant already exists: the create is idempotent (200) or refused (400); never reveals the
        // other base.
        expect([200, 400], `${c.name}: ${r.text}`).toContain(r.status);
        if (r.status === 200) expect(r.body.id).toBe(cells[c.cell].u1SchemaId);
        expectNoForeignStrings(c, 'variant basedOn a foreign base', r.text);
      }
    }
    // An unbound credential authoring a new typeName basedOn a foreign schema: refused without naming it.
    for (const c of creds.filter((x) => !x.boundUser)) {
      const other = Object.values(cells).find((x) => x.id !== c.cell)!;
      const r = await call(c, 'POST', '/v1/schemas', schemaBody(`Based_${short()}`, { basedOn: other.baseSchemaId }));
      expect(r.status, `${c.name}: ${r.text}`).toBe(400);
      expectNoForeignStrings(c, 'basedOn a foreign schema', r.text);
    }
  });

  it('minting a token for another tenant’s or context’s context → 404, identical to a random context', async () => {
    for (const c of creds) {
      const rnd = await call(c, 'POST', '/v1/tokens', {
        scope: { allowedActions: ['records:r'] },
        contextId: randomUUID(),
      });
      expect(rnd.status, `${c.name}: ${rnd.text}`).toBe(404);
      for (const other of Object.values(cells).filter(
        (x) => x.contextId !== cells[c.cell].contextId && !(c.crossContext && x.tenantId === cells[c.cell].tenantId),
      )) {
        const r = await call(c, 'POST', '/v1/tokens', {
          scope: { allowedActions: ['records:r'] },
          contextId: other.contextId,
        });
        expect(r.status, `${c.name} → ${other.id}: ${r.text}`).toBe(404);
        expect(withoutRequestId(r)).toBe(withoutRequestId(rnd));
      }
    }
  });

  it('a developer token making a key for another account’s tenant or context is refused as a random one', async () => {
    const forTenant = await api.post('/developer/keys', B.developerToken, {
      tenantId: A.tenants.live.tenantId,
      allowedActions: ['records:r'],
    });
    const rndTenant = await api.post('/developer/keys', B.developerToken, {
      tenantId: randomUUID(),
      allowedActions: ['records:r'],
    });
    expect(forTenant.status).toBe(403);
    expect(withoutRequestId(forTenant)).toBe(withoutRequestId(rndTenant));
    const forCtx = await api.post('/developer/keys', A.developerToken, {
      tenantId: A.tenants.live.tenantId,
      contextId: B.tenants.live.contextId,
      allowedActions: ['records:r'],
    });
    const rndCtx = await api.post('/developer/keys', A.developerToken, {
      tenantId: A.tenants.live.tenantId,
      contextId: randomUUID(),
      allowedActions: ['records:r'],
    });
    expect(forCtx.status).toBe(404);
    expect(withoutRequestId(forCtx)).toBe(withoutRequestId(rndCtx));
    // A's test context is not a context of A's live tenant either
    const crossEnv = await api.post('/developer/keys', A.developerToken, {
      tenantId: A.tenants.live.tenantId,
      contextId: A.tenants.test.contextId,
      allowedActions: ['records:r'],
    });
    expect(withoutRequestId(crossEnv)).toBe(withoutRequestId(rndCtx));
  });

  it('a conflict on an externalId held by an out-of-scope record names neither the record nor its owner', async () => {
    const c = creds.find((x) => x.kind === 'st-u1' && x.cell === 'A.live.ctx1')!;
    const held = cells['A.live.ctx1'].records.find((r) => r.userId === U2)!;
    const r = await call(c, 'POST', '/v1/records', {
      typeName: TYPE,
      externalId: held.externalId,
      payload: { amount: 1 },
    });
    expect(r.status, r.text).toBe(409);
    expect(r.text).not.toContain(held.id);
    expect(r.text).not.toContain(U2);
  });
});

describe('credential planes', () => {
  it('the developer token on the data plane → 403 (records, schemas, contexts, tokens), both accounts', async () => {
    for (const [dev, cell] of [
      [A.developerToken, cells['A.live.ctx1']],
      [B.developerToken, cells['B.live']],
    ] as const) {
      const own = cell.records[0].id;
      const reqs: Array<[string, string, unknown?]> = [
        ['GET', '/v1/records'],
        ['GET', `/v1/records?type=${TYPE}`],
        ['POST', '/v1/records', { typeName: TYPE, payload: { amount: 1 } }],
        ['GET', `/v1/records/${own}`],
        ['PATCH', `/v1/records/${own}`, { status: 'X' }],
        ['DELETE', `/v1/records/${own}`],
        ['GET', `/v1/records/${own}/versions`],
        ['GET', '/v1/schemas'],
        ['GET', `/v1/schemas/${cell.baseSchemaId}`],
        ['POST', '/v1/schemas', schemaBody(`Dev_${short()}`)],
        ['GET', '/v1/contexts'],
        ['POST', '/v1/tokens', { scope: { allowedActions: ['records:r'] } }],
      ];
      for (const [method, path, body] of reqs) {
        const r = await api.call(method, path, { token: dev, body });
        expect(r.status, `dt_ ${method} ${path}: ${r.text}`).toBe(403);
        expect(r.text).not.toContain(cell.tenantId);
      }
    }
  });

  it('a root key, a scoped key or a minted token on /developer/keys → 403', async () => {
    for (const c of creds) {
      const r = await api.post('/developer/keys', c.token, {
        tenantId: cells[c.cell].tenantId,
        allowedActions: ['records:r'],
      });
      expect(r.status, `${c.name}: ${r.text}`).toBe(403);
    }
  });
});

describe('data scopes on schemas (identity-bound credentials)', () => {
  /** A variant of `Invoice` owned by u2, in the cells that have u1-bound credentials of both accounts. */
  const u2Variant = {} as Record<CellId, string>;
  const bound = () => creds.filter((c) => c.boundUser === U1 && (c.cell === 'A.live.ctx1' || c.cell === 'B.live'));

  beforeAll(async () => {
    for (const id of ['A.live.ctx1', 'B.live'] as CellId[]) {
      const r = await call(
        rootOf(id),
        'POST',
        '/v1/schemas',
        schemaBody(TYPE, { userId: U2, basedOn: cells[id].baseSchemaId }),
      );
      expect(r.status, r.text).toBe(201);
      expect(r.body.userId).toBe(U2);
      u2Variant[id] = r.body.id;
      await eventually(async () => (await call(rootOf(id), 'GET', `/v1/schemas/${r.body.id}/versions`)).status === 200);
    }
  });

  it(
    'another user’s variant schema is out of scope: GET /v1/schemas/:id → the 404 of a random id, and lists ' +
      'leave it out',
    async () => {
      const failures: string[] = [];
      for (const c of bound()) {
        const id = u2Variant[c.cell];
        const rnd = await call(c, 'GET', `/v1/schemas/${randomUUID()}`);
        const g = await call(c, 'GET', `/v1/schemas/${id}`);
        if (g.status !== 404 || withoutRequestId(g) !== withoutRequestId(rnd))
          failures.push(`${c.name} GET /v1/schemas/${id} (userId u2) → ${g.status} ${g.text.slice(0, 120)}`);
        const v = await call(c, 'GET', `/v1/schemas/${id}/versions`);
        if (v.status !== 404) failures.push(`${c.name} GET /v1/schemas/${id}/versions → ${v.status}`);
        const l = await allPages(c, '/v1/schemas?limit=100');
        if (l.ids.includes(id)) failures.push(`${c.name} GET /v1/schemas lists the u2 variant ${id}`);
      }
      expect(failures, failures.join('\n')).toEqual([]);
    },
  );

  it(
    'another user’s variant schema cannot be written through (POST /v1/records with its schemaId → 404 of a ' +
      'random schemaId)',
    async () => {
      const failures: string[] = [];
      for (const c of bound()) {
        const rnd = await call(c, 'POST', '/v1/records', { schemaId: randomUUID(), payload: { amount: 1 } });
        const r = await call(c, 'POST', '/v1/records', { schemaId: u2Variant[c.cell], payload: { amount: 1 } });
        if (r.status === 201)
          cells[c.cell].records.push({
            id: r.body.id,
            cell: c.cell,
            userId: r.body.userId,
            externalId: null,
            typeName: TYPE,
          });
        if (r.status !== 404 || withoutRequestId(r) !== withoutRequestId(rnd))
          failures.push(`${c.name} POST /v1/records {schemaId: u2 variant} → ${r.status} ${r.text.slice(0, 120)}`);
      }
      expect(failures, failures.join('\n')).toEqual([]);
    },
  );

  it('the shared base stays visible to an identity-bound credential, on GET and on /versions alike', async () => {
    const failures: string[] = [];
    for (const c of bound()) {
      const id = cells[c.cell].baseSchemaId;
      const g = await call(c, 'GET', `/v1/schemas/${id}`);
      const v = await call(c, 'GET', `/v1/schemas/${id}/versions`);
      if (g.status !== 200 || v.status !== 200)
        failures.push(`${c.name} shared base ${id}: GET → ${g.status}, /versions → ${v.status}`);
    }
    expect(failures, failures.join('\n')).toEqual([]);
  });
});

describe('scope-bound credentials (dataScope.scopes = [org:acme])', () => {
  const ACME = 'org:acme';
  const scoped: Cred[] = [];

  beforeAll(async () => {
    for (const id of ['A.live.ctx1', 'B.live'] as CellId[]) {
      const t = await call(rootOf(id), 'POST', '/v1/tokens', {
        scope: { allowedActions: ['records:*', 'schemas:r'], dataScope: { scopes: [ACME] } },
      });
      expect(t.status, t.text).toBe(201);
      scoped.push({ name: `${id}/st-acme`, kind: 'st', cell: id, token: t.body.token, crossContext: false });
    }
    const k = await api.post('/developer/keys', A.developerToken, {
      tenantId: A.tenants.live.tenantId,
      allowedActions: ['*'],
      dataScope: { scopes: [ACME] },
    });
    expect(k.status, k.text).toBe(201);
    scoped.push({
      name: 'A.live.ctx1/ssk-acme',
      kind: 'ssk',
      cell: 'A.live.ctx1',
      token: k.body.key,
      crossContext: false,
    });
  });

  const inScope = (r: Rec, ids: Map<string, string[]>) => (ids.get(r.id) ?? []).includes(ACME);

  it('lists only records carrying org:acme of its own context, and reads nothing else', async () => {
    for (const c of scoped) {
      // the owner's view of every record's scopes
      const scopesOf = new Map<string, string[]>();
      for (const r of (await call(rootOf(c.cell), 'GET', '/v1/records?limit=100')).body.data)
        scopesOf.set(r.id, r.scopes);
      const expected = cells[c.cell].records.filter((r) => inScope(r, scopesOf)).map((r) => r.id);
      expect(expected.length, c.name).toBeGreaterThan(0);
      const l = await allPages(c, '/v1/records?limit=2');
      expect([...l.ids].sort(), c.name).toEqual([...expected].sort());
      const rnd = await call(c, 'GET', `/v1/records/${randomUUID()}`);
      for (const cell of Object.values(cells))
        for (const r of cell.records.filter((x) => !(x.cell === c.cell && inScope(x, scopesOf)))) {
          const g = await call(c, 'GET', `/v1/records/${r.id}`);
          expect(g.status, `${c.name} GET ${cell.id} record ${r.id}`).toBe(404);
          expect(withoutRequestId(g)).toBe(withoutRequestId(rnd));
        }
    }
  });

  it('a write without scopes is stamped org:acme; a write naming another scope is a 403', async () => {
    for (const c of scoped) {
      const a = await call(c, 'POST', '/v1/records', { typeName: TYPE, payload: { amount: 30 } });
      expect(a.status, `${c.name}: ${a.text}`).toBe(201);
      expect(a.body.scopes).toEqual([ACME]);
      cells[c.cell].records.push({
        id: a.body.id,
        cell: c.cell,
        userId: a.body.userId,
        externalId: null,
        typeName: TYPE,
      });
      const b = await call(c, 'POST', '/v1/records', {
        typeName: TYPE,
        scopes: ['org:other'],
        payload: { amount: 31 },
      });
      expect(b.status, `${c.name}: ${b.text}`).toBe(403);
      const p = await call(c, 'PATCH', `/v1/records/${a.body.id}`, { scopes: ['org:other'] });
      expect(p.status, `${c.name}: ${p.text}`).toBe(403);
    }
  });

  it('a scope-bound credential cannot write a record out of its scope with scopes: [] (create or PATCH)', async () => {
    const failures: string[] = [];
    for (const c of scoped) {
      const created = await call(c, 'POST', '/v1/records', { typeName: TYPE, scopes: [], payload: { amount: 32 } });
      if (created.status === 201) {
        cells[c.cell].records.push({
          id: created.body.id,
          cell: c.cell,
          userId: created.body.userId,
          externalId: null,
          typeName: TYPE,
        });
        const back = await call(c, 'GET', `/v1/records/${created.body.id}`);
        if (back.status !== 200)
          failures.push(
            `${c.name} POST {scopes: []} → 201 with scopes ${JSON.stringify(created.body.scopes)}, and ` +
              `the record is then out of its reach (GET → ${back.status})`,
          );
      } else if (created.status !== 403)
        failures.push(`${c.name} POST {scopes: []} → ${created.status} ${created.text}`);

      const own = await call(c, 'POST', '/v1/records', { typeName: TYPE, payload: { amount: 33 } });
      expect(own.status, own.text).toBe(201);
      cells[c.cell].records.push({
        id: own.body.id,
        cell: c.cell,
        userId: own.body.userId,
        externalId: null,
        typeName: TYPE,
      });
      const patched = await call(c, 'PATCH', `/v1/records/${own.body.id}`, { scopes: [] });
      if (patched.status === 200) {
        const back = await call(c, 'GET', `/v1/records/${own.body.id}`);
        if (back.status !== 200)
          failures.push(
            `${c.name} PATCH {scopes: []} → 200 with scopes ${JSON.stringify(patched.body.scopes)}, and ` +
              `the record is then out of its reach (GET → ${back.status})`,
          );
      } else if (patched.status !== 403)
        failures.push(`${c.name} PATCH {scopes: []} → ${patched.status} ${patched.text}`);
    }
    expect(failures, failures.join('\n')).toEqual([]);
  });
});
