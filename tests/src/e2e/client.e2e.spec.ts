/**
 * The typed client (@svc/client, docs/client.md) against a real started service:
 * its generated types agree with the served /openapi.json, typed requests and
 * answers, errors as values with errorCode and requestId, pagination over
 * nextCursor, the presigned upload in one call, the inference streams as typed
 * events, and webhook signature verification per the spec's Signature contract.
 */
import { createHmac, randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { PDFDocument, StandardFonts } from 'pdf-lib';
import { afterAll, beforeAll, describe, expect, expectTypeOf, it } from 'vitest';
import {
  ApiError,
  collectAnswer,
  createClient,
  result,
  unwrap,
  type Answer,
  type RagEvent,
  type ServiceClient,
} from '@svc/client';
import { parseWebhook, verifySignature } from '@svc/client/node';
import { signDelivery } from '@svc/domain';
import { renderTypes, TYPES_FILE } from '../../../client/scripts/render';
import { eventually, OPERATOR_TOKEN, startService, type TestService } from '../support/service';

let svc: TestService;
let api: ServiceClient;
let calls: string[] = [];
const uniq = (p: string) => `${p}_${randomUUID().slice(0, 8)}`;

beforeAll(async () => {
  svc = await startService();
  const operator = createClient({ baseUrl: svc.url, token: OPERATOR_TOKEN });
  const account = await unwrap(
    operator.POST('/operator/accounts', { body: { plan: 'enterprise', inferenceBalanceCents: 500 } }),
  );
  // A fetch that records the requests, to see the pages of a list.
  const recording: typeof fetch = (input, init) => {
    const req = input instanceof Request ? input : new Request(input, init);
    calls.push(`${req.method} ${new URL(req.url).pathname}${new URL(req.url).search}`);
    return fetch(req);
  };
  api = createClient({ baseUrl: svc.url, token: account.tenants.live.rootKey, fetch: recording });
}, 120_000);

afterAll(async () => {
  await svc?.stop();
});

describe('the generated types', () => {
  it('agree with the served /openapi.json (else: npm run generate -w client)', async () => {
    const served = (await (await fetch(`${svc.url}/openapi.json`)).json()) as object;
    expect(
      readFileSync(fileURLToPath(TYPES_FILE), 'utf8') === (await renderTypes(served)),
      'client/src/generated/openapi.ts is out of date: run npm run generate -w client',
    ).toBe(true);
  });
});

describe('typed requests and answers', () => {
  let typeName: string;

  it('creates a schema, writes, reads, patches and looks up records', async () => {
    typeName = uniq('Ticket');
    const schema = await unwrap(
      api.POST('/v1/schemas', {
        body: {
          typeName,
          displayName: 'Ticket',
          allowedSurfaces: ['record'],
          fields: [
            { fieldId: 'title', fieldType: 'string', required: true, searchable: true },
            { fieldId: 'priority', fieldType: 'number' },
          ],
          lookupFields: [{ fieldName: 'priority' }],
        },
      }),
    );
    expect(schema).toMatchObject({ typeName, schemaVersion: 1 });

    const created = await unwrap(
      api.POST('/v1/records', { body: { typeName, payload: { title: 'Printer on fire', priority: 1 } } }),
    );
    expectTypeOf(created).toEqualTypeOf<Answer<'createRecord'>>();
    expect(created).toMatchObject({ typeName, version: 1, payload: { title: 'Printer on fire', priority: 1 } });

    const got = await unwrap(api.GET('/v1/records/{id}', { params: { path: { id: created.id } } }));
    expect(got.id).toBe(created.id);
    expectTypeOf(got.version).toEqualTypeOf<number>();

    const patched = await unwrap(
      api.PATCH('/v1/records/{id}', {
        params: { path: { id: created.id } },
        body: { payload: { priority: 2 }, expectedVersion: 1 },
      }),
    );
    expect(patched).toMatchObject({ version: 2, payload: { title: 'Printer on fire', priority: 2 } });

    const found = await unwrap(
      api.GET('/v1/records/lookup', { params: { query: { type: typeName, field: 'priority', value: '2' } } }),
    );
    expect(found.data.map((r) => r.id)).toEqual([created.id]);

    // A list with a path parameter pages the same way (version rows are written asynchronously).
    const versions = await eventually(async () => {
      const rows: number[] = [];
      for await (const v of api.paginate('/v1/records/{id}/versions', {
        path: { id: created.id },
        query: { limit: 1 },
      }))
        rows.push(v.version);
      return rows.length === 2 ? rows : null;
    }, 20_000);
    expect(versions).toEqual([1, 2]);
  });

  it('answers a refusal as a typed value with errorCode and requestId', async () => {
    const missing = await result(api.GET('/v1/records/{id}', { params: { path: { id: randomUUID() } } }));
    expect(missing.ok).toBe(false);
    if (missing.ok) return;
    expect(missing.error).toBeInstanceOf(ApiError);
    expect(missing.error).toMatchObject({ status: 404, errorCode: 'NOT_FOUND' });
    expect(missing.error.requestId).toBe(missing.response.headers.get('x-request-id'));

    const rec = await unwrap(api.POST('/v1/records', { body: { typeName, payload: { title: 'Stale', priority: 3 } } }));
    const stale = api.PATCH('/v1/records/{id}', {
      params: { path: { id: rec.id } },
      body: { payload: { priority: 4 }, expectedVersion: 7 },
    });
    await expect(unwrap(stale)).rejects.toMatchObject({
      name: 'ApiError',
      status: 409,
      errorCode: 'VERSION_CONFLICT',
      requestId: expect.any(String),
    });

    // The openapi-fetch answer itself types the error body too.
    const raw = await api.GET('/v1/schemas/{id}', { params: { path: { id: randomUUID() } } });
    expectTypeOf(raw.error).toMatchTypeOf<{ message: string; errorCode?: string; requestId?: string } | undefined>();
    expect(raw.error).toMatchObject({ errorCode: 'NOT_FOUND', requestId: expect.any(String) });
  });

  it('pages a list with an async iterator over nextCursor', async () => {
    const t = uniq('Page');
    await unwrap(api.POST('/v1/schemas', { body: { typeName: t, displayName: 'Page', allowedSurfaces: ['record'] } }));
    const ids: string[] = [];
    for (let i = 0; i < 5; i++)
      ids.push((await unwrap(api.POST('/v1/records', { body: { typeName: t, payload: { n: i } } }))).id);
    calls = [];
    const seen: string[] = [];
    for await (const r of api.paginate('/v1/records', { query: { type: t, limit: 2 } })) {
      expectTypeOf(r.id).toEqualTypeOf<string>();
      seen.push(r.id);
    }
    expect(seen.sort()).toEqual([...ids].sort());
    const pages = calls.filter((c) => c.startsWith('GET /v1/records?'));
    expect(pages.length).toBeGreaterThanOrEqual(3);
    expect(pages.slice(1).every((c) => c.includes('startFrom='))).toBe(true);
  });
});

describe('documents, search and inference', () => {
  let docId: string;

  it('uploads a PDF in one call and reads its text once indexed', async () => {
    const pdf = await PDFDocument.create();
    const font = await pdf.embedFont(StandardFonts.Helvetica);
    pdf.addPage().drawText('Emperor penguins incubate their eggs on their feet through the Antarctic winter.', {
      x: 30,
      y: 700,
      size: 11,
      font,
    });
    const uploaded = await api.uploadDocument({
      title: 'Penguin notes',
      fileName: 'penguins.pdf',
      fileType: 'application/pdf',
      indexMode: 'HYBRID',
      file: await pdf.save(),
    });
    expect(uploaded.status).not.toBe('PENDING_UPLOAD');
    const done = await api.waitForDocument(uploaded.id);
    expect(done.status).toBe('INDEXED');
    docId = done.id;
    const text = await unwrap(api.GET('/v1/documents/{id}/text', { params: { path: { id: docId } } }));
    expect(text.text).toContain('Emperor penguins');
  });

  it('searches', async () => {
    const hits = await eventually(async () => {
      const r = await unwrap(api.POST('/v1/search', { body: { query: 'penguins eggs', mode: 'TEXT' } }));
      return r.results.some((h) => h.documentId === docId) ? r : null;
    }, 30_000);
    expect(hits!.totalResults).toBeGreaterThan(0);
  });

  it('streams RAG as typed events', async () => {
    const events: RagEvent[] = [];
    for await (const e of api.rag({ query: 'How do emperor penguins incubate their eggs?' })) events.push(e);
    expect(events[0].event).toBe('search_results');
    if (events[0].event === 'search_results') expect(events[0].data.results.length).toBeGreaterThan(0);
    const last = events[events.length - 1];
    expect(last.event).toBe('done');
    const answer = await collectAnswer(api.rag({ query: 'How do emperor penguins incubate their eggs?' }));
    expect(answer.text).toMatch(/penguins/i);
    expect(answer.done.model).toBe('builtin-extractive');
  });

  it('streams a document ask and a chat; a refusal before the stream is an ApiError', async () => {
    const ask: string[] = [];
    for await (const e of api.askDocument(docId, { prompt: 'Where do the penguins keep their eggs?' }))
      ask.push(e.event);
    expect(ask[0]).toBe('document_context');
    expect(ask[ask.length - 1]).toBe('done');

    const chat = await collectAnswer(
      api.chat({
        messages: [{ role: 'user', content: 'Penguins keep eggs on their feet. Where do penguins keep eggs?' }],
      }),
    );
    expect(chat.text.length).toBeGreaterThan(0);

    const refused = (async () => {
      for await (const _ of api.askDocument(randomUUID(), { prompt: 'anything?' })) void _;
    })();
    await expect(refused).rejects.toMatchObject({ status: 404, errorCode: 'NOT_FOUND' });
  });
});

describe('webhook signatures', () => {
  const secret = 'a1'.repeat(32);
  const body = JSON.stringify({
    id: 'dlv_1',
    version: '2024-01',
    type: 'record.indexed',
    created: 1,
    tenantId: 't',
    livemode: true,
    data: { id: 'r', typeName: 'Ticket', indexStatus: 'INDEXED' },
  });
  /**
   * The spec's Signature contract, computed here independently: hex HMAC-SHA256 keyed by the hex-decoded secret over
   * `<timestamp>.<body>`.
   */
  const sign = (ts: number, raw: string, key = secret) =>
    `sha256=${createHmac('sha256', Buffer.from(key, 'hex')).update(`${ts}.${raw}`).digest('hex')}`;

  it('accepts an authentic delivery (Headers or a plain header record)', () => {
    const ts = Math.floor(Date.now() / 1000);
    const headers = {
      'X-Service-Delivery': 'dlv_1',
      'X-Service-Timestamp': String(ts),
      'X-Service-Signature': sign(ts, body),
    };
    expect(verifySignature(body, headers, secret)).toBe(true);
    expect(verifySignature(Buffer.from(body), new Headers(headers), secret)).toBe(true);
  });

  it("verifies what the service's own signer signs, and parses the typed envelope", () => {
    const ts = Math.floor(Date.now() / 1000);
    const headers = {
      'x-service-delivery': 'dlv_1',
      'x-service-timestamp': String(ts),
      'x-service-signature': signDelivery(secret, ts, body),
    };
    expect(verifySignature(body, headers, secret)).toBe(true);
    const envelope = parseWebhook(body, headers, secret);
    expect(envelope.type).toBe('record.indexed');
    if (envelope.type === 'record.indexed') expectTypeOf(envelope.data.typeName).toEqualTypeOf<string>();
    expect(() => parseWebhook(body + ' ', headers, secret)).toThrow(/signature/);
  });

  it('refuses a changed body, another secret, a stale or future timestamp, and malformed headers', () => {
    const ts = Math.floor(Date.now() / 1000);
    const at = { now: ts * 1000 }; // fixed clock: a slow run must not move the window's edges
    const h = (t: number, sig: string) => ({ 'x-service-timestamp': String(t), 'x-service-signature': sig });
    expect(verifySignature(body.replace('"r"', '"s"'), h(ts, sign(ts, body)), secret, at)).toBe(false);
    expect(verifySignature(body, h(ts, sign(ts, body, 'b2'.repeat(32))), secret, at)).toBe(false);
    expect(verifySignature(body, h(ts - 301, sign(ts - 301, body)), secret, at)).toBe(false);
    expect(verifySignature(body, h(ts + 301, sign(ts + 301, body)), secret, at)).toBe(false);
    expect(verifySignature(body, h(ts - 299, sign(ts - 299, body)), secret, at)).toBe(true);
    expect(verifySignature(body, { 'x-service-timestamp': String(ts) }, secret, at)).toBe(false);
    expect(verifySignature(body, h(ts, sign(ts, body).replace('sha256=', 'sha1=')), secret, at)).toBe(false);
  });
});
