import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PDFDocument, StandardFonts } from 'pdf-lib';
import { Document, Packer, Paragraph, TextRun } from 'docx';
import {
  checkedClient,
  eventually,
  spawnService,
  startService,
  type Api,
  type Bootstrap,
  type TestService,
} from '../support/service';
import { tempDir } from '../support/engines';
import { expectStatus, unwrap, type Answer, type Body } from '../support/typed';

/**
 * Documents (spec "Document", "Documents (operations by name)", document
 * `status`, Authentication 6, Errors; decisions §1 paths incl. /storage
 * presigned URLs and §4 version row / tombstone; docs/documents.md).
 * Black-box over HTTP: inline ingest, the presigned upload flow with real
 * generated files, extraction, the storage layer's 403s, storeText, changes,
 * delete, lookup, permissions and tenancy.
 */
let svc: TestService;
let api: Api;
let acct: Bootstrap;
let root: string;
let u1: string;
let u2: string;

const ALL = ['documents:c', 'documents:r', 'documents:u', 'documents:d', 'schemas:c', 'schemas:r'];
const DOC_KEYS = [
  'createdAt',
  'externalId',
  'fileSize',
  'fileType',
  'folderId',
  'id',
  'indexMode',
  'lastModified',
  'payload',
  'payloadExternalized',
  'schemaId',
  'schemaVersion',
  'scopes',
  'status',
  'storeText',
  'textBytes',
  'title',
  'userId',
  'version',
].sort();
const SENTENCE = 'The quick brown fox files its quarterly report on Tuesday.';
const DOCX_TYPE = 'application/vnd.openxmlformats-officedocument.wordprocessingml.document';
const SETTLED = ['INDEXED', 'SKIPPED', 'STORED', 'FAILED'];

const uniq = (p: string) => `${p}_${randomUUID().slice(0, 8)}`;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

beforeAll(async () => {
  svc = await startService();
  api = svc.api;
  acct = await api.newAccount({ plan: 'enterprise', rateLimitPerMinute: 1_000_000, creditLimit: 1_000_000_000 });
  root = acct.tenants.live.rootKey;
  u1 = await mint(root, ALL, { userId: 'u1' });
  u2 = await mint(root, ALL, { userId: 'u2' });
});

afterAll(async () => {
  await svc?.stop();
});

// Typed calls (@svc/client): the answers are the generated types, so a renamed field fails the typecheck.
async function mint(
  by: string,
  allowedActions: string[],
  dataScope?: Body<'mintToken'>['scope']['dataScope'],
): Promise<string> {
  return (
    await expectStatus(
      svc.client(by).POST('/v1/tokens', { body: { scope: { allowedActions, ...(dataScope ? { dataScope } : {}) } } }),
      201,
    )
  ).token;
}

async function ingest(body: Partial<Body<'ingestDocument'>> & Record<string, unknown>, token = root) {
  return expectStatus(
    svc
      .client(token)
      .POST('/v1/documents', { body: { title: uniq('Doc'), indexMode: 'HYBRID', ...body } as Body<'ingestDocument'> }),
    201,
  );
}

/** Polls the document until its status settles (or equals `want`). */
async function settled(id: string, token = root, want?: string): Promise<Answer<'getDocument'>> {
  return eventually<Answer<'getDocument'> | null>(async () => {
    const r = await svc.client(token).GET('/v1/documents/{id}', { params: { path: { id } } });
    if (!r.data) return null;
    return (want ? r.data.status === want : SETTLED.includes(r.data.status)) ? r.data : null;
  }, 60_000) as Promise<Answer<'getDocument'>>;
}

async function requestUpload(
  body: Partial<Body<'uploadDocument'>> & Record<string, unknown>,
  token = root,
  a: Api = api,
) {
  const client = a === api ? svc.client(token) : checkedClient(a.baseUrl, { token });
  return expectStatus(
    client.POST('/v1/documents/upload', {
      body: { title: uniq('File'), indexMode: 'HYBRID', ...body } as Body<'uploadDocument'>,
    }),
    201,
  );
}

function putFile(
  up: { uploadUrl: string; requiredHeaderName: string; requiredHeaderValue: string },
  body: NonNullable<RequestInit['body']>,
  contentType: string | null,
  header: string | null = up.requiredHeaderValue,
) {
  const headers: Record<string, string> = {};
  if (contentType !== null) headers['content-type'] = contentType;
  if (header !== null) headers[up.requiredHeaderName] = header;
  return fetch(up.uploadUrl, { method: 'PUT', headers, body, duplex: 'half' } as RequestInit);
}

async function uploadFile(
  fileName: string,
  fileType: string,
  data: Uint8Array | string,
  extra: Record<string, unknown> = {},
) {
  const up = await requestUpload({ fileName, fileType, ...extra });
  const res = await putFile(up, typeof data === 'string' ? data : Buffer.from(data), fileType);
  expect(res.status, await res.clone().text()).toBe(200);
  return up;
}

async function pdfWith(lines: string[], pages = 1): Promise<Uint8Array> {
  const pdf = await PDFDocument.create();
  const font = await pdf.embedFont(StandardFonts.Helvetica);
  for (let p = 0; p < pages; p++) {
    const page = pdf.addPage();
    lines.forEach((l, i) => page.drawText(l, { x: 50, y: 750 - i * 20, size: 12, font }));
  }
  return pdf.save();
}

async function docxWith(text: string): Promise<Buffer> {
  const doc = new Document({
    sections: [
      {
        children: [
          new Paragraph({ children: [new TextRun('Heading line')] }),
          new Paragraph({ children: [new TextRun(text)] }),
        ],
      },
    ],
  });
  return Packer.toBuffer(doc);
}

async function expectStorage403(res: Response) {
  expect(res.status).toBe(403);
  expect(res.headers.get('content-type')).toMatch(/^application\/xml/);
  const text = await res.text();
  expect(text.startsWith('<?xml version="1.0" encoding="UTF-8"?>')).toBe(true);
  expect(text).toMatch(/<Error><Code>AccessDenied<\/Code><Message>[^<]+<\/Message>/);
  expect(text).not.toContain('errorCode');
}

const text = (id: string, token = root) => api.get(`/v1/documents/${id}/text`, token);

describe('inline ingest', () => {
  it('201 with exactly the spec fields; polls to INDEXED; the text is retrievable as JSON', async () => {
    const d = await ingest({ text: `Hello. ${SENTENCE}`, payload: { a: 1 } });
    expect(Object.keys(d).sort()).toEqual(DOC_KEYS);
    expect(d).toMatchObject({
      status: 'PENDING_INDEX',
      indexMode: 'HYBRID',
      storeText: true,
      version: 1,
      fileType: null,
      fileSize: null,
      schemaId: null,
      payload: { a: 1 },
    });
    expect(d.textBytes).toBe(Buffer.byteLength(`Hello. ${SENTENCE}`));
    const done = await settled(d.id);
    expect(done.status).toBe('INDEXED');
    expect(done.version).toBe(1); // index-status events never change version
    expect(done).not.toHaveProperty('indexFailure');
    const t = await text(d.id);
    expect(t.status, t.text).toBe(200);
    expect(t.body).toEqual({ id: d.id, text: `Hello. ${SENTENCE}`, textBytes: d.textBytes });
  });

  it('folderId defaults to the context root folder; an unknown folderId is 404', async () => {
    const d = await ingest({ text: 'x' });
    const f = await api.get(`/v1/folders/${d.folderId}`, root);
    expect(f.status, f.text).toBe(200);
    expect(f.body.isProtected).toBe(true);
    expect(
      (await api.post('/v1/documents', root, { title: 't', text: 'x', indexMode: 'TEXT', folderId: randomUUID() }))
        .status,
    ).toBe(404);
  });

  it('indexMode NONE settles STORED; whitespace-only text settles SKIPPED; both keep their text', async () => {
    const stored = await ingest({ text: 'keep me', indexMode: 'NONE' });
    const skipped = await ingest({ text: '   \n\t ' });
    expect((await settled(stored.id)).status).toBe('STORED');
    expect((await settled(skipped.id)).status).toBe('SKIPPED');
    expect((await text(stored.id)).body.text).toBe('keep me');
    expect((await text(skipped.id)).body.text).toBe('   \n\t ');
  });

  it('indexMode is required without a schema default (400); storeText is not accepted on inline ingest', async () => {
    const r = await api.post('/v1/documents', root, { title: 't', text: 'x' });
    expect(r.status, r.text).toBe(400);
    expect(r.body.errorCode).toBe('VALIDATION_ERROR');
    expect(
      (await api.post('/v1/documents', root, { title: 't', text: 'x', indexMode: 'TEXT', storeText: false })).status,
    ).toBe(400);
    expect((await api.post('/v1/documents', root, { text: 'x', indexMode: 'TEXT' })).status).toBe(400);
  });

  it(
    'a bound schema supplies the default indexMode and validates the payload (required on create only); ' +
      'undeclared keys pass through',
    async () => {
      const s = await api.post('/v1/schemas', root, {
        typeName: uniq('D'),
        displayName: 'Docs',
        allowedSurfaces: ['document'],
        indexMode: 'TEXT',
        fields: [{ fieldId: 'sku', fieldType: 'string', required: true }],
      });
      expect(s.status, s.text).toBe(201);
      const d = await ingest({
        indexMode: undefined,
        schemaId: s.body.id,
        text: 'x',
        payload: { sku: 'A-1', extra: true },
      });
      expect(d).toMatchObject({
        indexMode: 'TEXT',
        schemaId: s.body.id,
        schemaVersion: 1,
        payload: { sku: 'A-1', extra: true },
      });
      const bad = await api.post('/v1/documents', root, {
        title: 't',
        text: 'x',
        schemaId: s.body.id,
        payload: { sku: 5 },
      });
      expect(bad.status, bad.text).toBe(400);
      const missing = await api.post('/v1/documents', root, {
        title: 't',
        text: 'x',
        schemaId: s.body.id,
        payload: {},
      });
      expect(missing.status).toBe(400);
      // required is enforced on create only: a PATCH null deleting it, or a PUT without it, is accepted; other rules
      // still apply
      const patched = await api.patch(`/v1/documents/${d.id}`, root, { payload: { sku: null } });
      expect(patched.status, patched.text).toBe(200);
      expect(patched.body.payload).toEqual({ extra: true });
      expect((await api.patch(`/v1/documents/${d.id}`, root, { payload: { sku: 5 } })).status).toBe(400);
      const put = await api.put(`/v1/documents/${d.id}`, root, { title: 't', payload: { note: 'n' } });
      expect(put.status, put.text).toBe(200);
      expect(put.body).toMatchObject({ schemaId: s.body.id, payload: { note: 'n' } });
      const recordOnly = await api.post('/v1/schemas', root, {
        typeName: uniq('R'),
        displayName: 'R',
        allowedSurfaces: ['record'],
      });
      expect(
        (
          await api.post('/v1/documents', root, {
            title: 't',
            text: 'x',
            indexMode: 'TEXT',
            schemaId: recordOnly.body.id,
          })
        ).status,
      ).toBe(400);
    },
  );

  it('externalId is idempotent per tenant and context: the same id returns the existing document, 200', async () => {
    const ext = uniq('ext');
    const a = await ingest({ text: 'one', externalId: ext });
    const b = await api.post('/v1/documents', root, {
      title: 'other',
      text: 'two',
      indexMode: 'TEXT',
      externalId: ext,
    });
    expect(b.status, b.text).toBe(200);
    expect(b.body.id).toBe(a.id);
    expect(b.body.title).toBe(a.title);
    // Held by a document u2 cannot read: 409, nothing created.
    const c = await ingest({ text: 'mine', externalId: uniq('ext') }, u1);
    const d = await api.post('/v1/documents', u2, {
      title: 't',
      text: 'x',
      indexMode: 'TEXT',
      externalId: c.externalId,
    });
    expect(d.status, d.text).toBe(409);
  });

  it('identity auto-assign stamps userId; another userId is 403', async () => {
    const d = await ingest({ text: 'x' }, u1);
    expect(d.userId).toBe('u1');
    expect(
      (await api.post('/v1/documents', u1, { title: 't', text: 'x', indexMode: 'TEXT', userId: 'u2' })).status,
    ).toBe(403);
  });
});

describe('presigned upload and extraction', () => {
  it('upload request: 201 with the document fields plus uploadUrl, expiresAt (15 min), required header', async () => {
    const before = Date.now();
    const up = await requestUpload({ fileName: 'a.txt', fileType: 'text/plain' });
    expect(Object.keys(up).sort()).toEqual(
      [...DOC_KEYS, 'expiresAt', 'requiredHeaderName', 'requiredHeaderValue', 'uploadUrl'].sort(),
    );
    expect(up.status).toBe('PENDING_UPLOAD');
    expect(up.storeText).toBe(true);
    expect(up.fileType).toBe('text/plain');
    expect(up.uploadUrl.startsWith(`${svc.url}/storage/`)).toBe(true);
    const ttl = Date.parse(up.expiresAt) - before;
    expect(ttl).toBeGreaterThan(14 * 60_000);
    expect(ttl).toBeLessThanOrEqual(15 * 60_000 + 5_000);
    expect((await text(up.id)).status).toBe(404); // nothing extracted yet
    expect((await api.get(`/v1/documents/${up.id}/download-url`, root)).status).toBe(404);
  });

  it(
    'a PDF with a known sentence: PENDING_UPLOAD -> ... -> INDEXED, text contains the sentence; download ' +
      'URL serves the bytes',
    async () => {
      const pdf = await pdfWith(['Report', SENTENCE]);
      const up = await uploadFile('report.pdf', 'application/pdf', pdf);
      const d = await settled(up.id);
      expect(d.status, JSON.stringify(d)).toBe('INDEXED');
      expect(d.fileSize).toBe(pdf.length);
      expect(d.fileType).toBe('application/pdf');
      expect(d.textBytes).toBeGreaterThan(0);
      expect(d.version).toBe(1);
      const t = await text(up.id);
      expect(t.body.text).toContain(SENTENCE);
      const dl = await api.get(`/v1/documents/${up.id}/download-url`, root);
      expect(dl.status, dl.text).toBe(200);
      expect(Object.keys(dl.body).sort()).toEqual(['downloadUrl', 'expiresAt']);
      const got = await fetch(dl.body.downloadUrl);
      expect(got.status).toBe(200);
      expect(got.headers.get('content-type')).toBe('application/pdf');
      expect(Buffer.from(await got.arrayBuffer()).equals(Buffer.from(pdf))).toBe(true);
      // Change the signature's first character to a different one (it may already be 'A': 1 time in 64).
      const tampered = await fetch(
        dl.body.downloadUrl.replace(/signature=(.)/, (_m: string, c: string) => `signature=${c === 'A' ? 'B' : 'A'}`),
      );
      expect(tampered.status).toBe(403);
    },
  );

  it('a DOCX, an HTML page and a CSV extract to text containing the sentence', async () => {
    const docx = await uploadFile('memo.docx', DOCX_TYPE, await docxWith(SENTENCE));
    const html = await uploadFile(
      'page.html',
      'text/html',
      '<!doctype html><html><head><title>T</title><style>p{color:red}</style></head>' +
        `<body><h1>News</h1><p>${SENTENCE}</p><script>var hidden = 1;</script></body></html>`,
    );
    const csv = await uploadFile('data.csv', 'text/csv', `id,note\n1,"${SENTENCE}"\n2,other\n`);
    for (const up of [docx, html, csv]) {
      const d = await settled(up.id);
      expect(d.status, JSON.stringify(d)).toBe('INDEXED');
      expect((await text(up.id)).body.text).toContain(SENTENCE);
    }
    const htmlText = (await text(html.id)).body.text as string;
    expect(htmlText).not.toContain('<p>');
    expect(htmlText).not.toContain('var hidden');
  });

  it('markdown and JSON are extracted as text', async () => {
    const md = await uploadFile('notes.md', 'text/markdown', `# Notes\n\n${SENTENCE}\n`);
    const js = await uploadFile('data.json', 'application/json', JSON.stringify({ note: SENTENCE }));
    for (const up of [md, js]) {
      expect((await settled(up.id)).status).toBe('INDEXED');
      expect((await text(up.id)).body.text).toContain(SENTENCE);
    }
  });

  it('a corrupt PDF ends FAILED with an indexFailure code; its text is 404', async () => {
    const up = await uploadFile(
      'broken.pdf',
      'application/pdf',
      Buffer.from('%PDF-1.7\nthis is not really a pdf\n%%EOF'),
    );
    const d = await settled(up.id);
    expect(d.status).toBe('FAILED');
    expect(d.indexFailure?.code).toBe('INDEXING_FAILED');
    expect(typeof d.indexFailure?.message).toBe('string');
    expect((await text(up.id)).status).toBe(404);
  });

  it('an empty text file is SKIPPED; a type with no extractor is FAILED (STORED for indexMode NONE)', async () => {
    const empty = await uploadFile('empty.txt', 'text/plain', ' ');
    expect((await settled(empty.id)).status).toBe('SKIPPED');
    const bin = await uploadFile('blob.bin', 'application/octet-stream', Buffer.from([1, 2, 3]));
    const b = await settled(bin.id);
    expect(b.status).toBe('FAILED');
    expect(b.indexFailure?.code).toBe('INDEXING_FAILED');
    const stored = await uploadFile('blob2.bin', 'application/octet-stream', Buffer.from([1, 2, 3]), {
      indexMode: 'NONE',
    });
    expect((await settled(stored.id)).status).toBe('STORED');
  });

  it('storeText false: indexed, then the text is discarded (404); storeText stays false', async () => {
    const up = await uploadFile('secret.txt', 'text/plain', SENTENCE, { storeText: false });
    expect(up.storeText).toBe(false);
    const d = await settled(up.id);
    expect(d.status).toBe('INDEXED');
    expect(d.storeText).toBe(false);
    await eventually(async () => (await text(up.id)).status === 404);
  });

  it('re-upload through the same externalId issues a new grant and keeps storeText', async () => {
    const ext = uniq('file');
    const first = await uploadFile('v1.txt', 'text/plain', 'version one', { storeText: false, externalId: ext });
    await settled(first.id);
    const again = await api.post('/v1/documents/upload', root, {
      title: 'v2',
      fileName: 'v2.txt',
      fileType: 'text/plain',
      indexMode: 'HYBRID',
      storeText: true,
      externalId: ext,
    });
    expect(again.status, again.text).toBe(200);
    expect(again.body.id).toBe(first.id);
    expect(again.body.storeText).toBe(false);
    expect(again.body.status).toBe('PENDING_UPLOAD');
    await expectStorage403(await putFile(first, 'stale grant', 'text/plain')); // the old URL is spent
    const res = await putFile(again.body, 'version two', 'text/plain');
    expect(res.status).toBe(200);
    const d = await settled(first.id, root, 'INDEXED');
    expect(d.fileSize).toBe('version two'.length);
  });
});

describe('the upload URL refuses with the storage layer 403 (XML, not the API error body)', () => {
  it('missing required header', async () => {
    const up = await requestUpload({ fileName: 'a.txt', fileType: 'text/plain' });
    await expectStorage403(await putFile(up, 'x', 'text/plain', null));
  });

  it('changed required header', async () => {
    const up = await requestUpload({ fileName: 'a.txt', fileType: 'text/plain' });
    await expectStorage403(
      await putFile(
        up,
        'x',
        'text/plain',
        up.requiredHeaderValue.slice(0, -1) + (up.requiredHeaderValue.endsWith('A') ? 'B' : 'A'),
      ),
    );
  });

  it('wrong content type (and none at all)', async () => {
    const up = await requestUpload({ fileName: 'a.pdf', fileType: 'application/pdf' });
    await expectStorage403(await putFile(up, 'x', 'text/plain'));
    await expectStorage403(await putFile(up, 'x', null));
    // The refusals spent nothing: the right request still works.
    expect((await putFile(up, Buffer.from(await pdfWith([SENTENCE])), 'application/pdf')).status).toBe(200);
  });

  it('second use', async () => {
    const up = await requestUpload({ fileName: 'a.txt', fileType: 'text/plain' });
    expect((await putFile(up, 'first', 'text/plain')).status).toBe(200);
    await expectStorage403(await putFile(up, 'second', 'text/plain'));
    await settled(up.id);
    expect((await text(up.id)).body.text).toBe('first');
  });

  it('tampered URL, and an Authorization header does not replace the grant', async () => {
    const up = await requestUpload({ fileName: 'a.txt', fileType: 'text/plain' });
    await expectStorage403(
      await putFile(
        { ...up, uploadUrl: up.uploadUrl.replace(/expires=\d+/, (m: string) => m + '9') },
        'x',
        'text/plain',
      ),
    );
    const withAuth = await fetch(up.uploadUrl, {
      method: 'PUT',
      headers: { 'content-type': 'text/plain', authorization: `Bearer ${root}` },
      body: 'x',
    });
    await expectStorage403(withAuth);
  });

  it('expired URL (UPLOAD_URL_TTL_SECONDS makes the lifetime testable)', async () => {
    const short = await startService({ env: { UPLOAD_URL_TTL_SECONDS: '1' } });
    try {
      const k = short.bootstrap.tenants.live.rootKey;
      const up = await requestUpload({ fileName: 'a.txt', fileType: 'text/plain' }, k, short.api);
      expect(Date.parse(up.expiresAt) - Date.now()).toBeLessThanOrEqual(1_000);
      await sleep(1_300);
      const res = await putFile(up, 'late', 'text/plain');
      await expectStorage403(res);
      expect((await short.api.get(`/v1/documents/${up.id}`, k)).body.status).toBe('PENDING_UPLOAD');
    } finally {
      await short.stop();
    }
  });
});

describe('a 25 MB upload streams to storage', () => {
  it('peak RSS growth of the server process stays under 64 MB', async () => {
    const port = await new Promise<number>((resolve) => {
      const s = createServer().listen(0, '127.0.0.1', () => {
        const p = (s.address() as { port: number }).port;
        s.close(() => resolve(p));
      });
    });
    const dir = tempDir('svc-docs-rss-');
    const { child, api: a } = await spawnService(dir.dir, port);
    try {
      const boot = JSON.parse(readFileSync(join(dir.dir, 'bootstrap.json'), 'utf8')) as Bootstrap;
      const k = boot.tenants.live.rootKey;
      const rss = () =>
        Number(/VmRSS:\s+(\d+)\s+kB/.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'))![1]) * 1024;
      // Warm up the paths the upload uses, then take the baseline.
      const warm = await requestUpload({ fileName: 'w.txt', fileType: 'text/plain', indexMode: 'NONE' }, k, a);
      expect((await putFile(warm, 'warm', 'text/plain')).status).toBe(200);
      const up = await requestUpload({ fileName: 'big.txt', fileType: 'text/plain', indexMode: 'NONE' }, k, a);
      await sleep(300);
      const base = rss();
      let peak = base;
      const timer = setInterval(() => (peak = Math.max(peak, rss())), 10);
      const SIZE = 25 * 1024 * 1024;
      const chunk = Buffer.alloc(64 * 1024, 'a');
      async function* body() {
        for (let sent = 0; sent < SIZE; sent += chunk.length) yield chunk;
      }
      try {
        const res = await putFile(
          up,
          ReadableStream.from(body()) as unknown as NonNullable<RequestInit['body']>,
          'text/plain',
        );
        expect(res.status, await res.text()).toBe(200);
        await sleep(200);
      } finally {
        clearInterval(timer);
      }
      if (process.env.DOCS_RSS_LOG)
        console.log(
          `rss base ${(base / 1048576).toFixed(1)} MB, peak growth ${((peak - base) / 1048576).toFixed(1)} MB`,
        );
      expect(peak - base, `peak ${peak} base ${base}`).toBeLessThan(64 * 1024 * 1024);
      const d = await eventually(async () => {
        const r = await a.get(`/v1/documents/${up.id}`, k);
        return SETTLED.includes(r.body.status) ? r.body : null;
      }, 60_000);
      expect(d.fileSize).toBe(SIZE);
      expect(d.status).toBe('STORED'); // above the extraction limit, store-only
    } finally {
      child.kill('SIGTERM');
      await new Promise((r) => child.once('exit', r));
      dir.remove();
    }
  }, 120_000);
});

describe('PUT and PATCH', () => {
  it('PATCH title and payload (merge) bumps version; text re-ingests to a new text and back to INDEXED', async () => {
    const d = await ingest({ text: 'old body', payload: { a: 1, b: 2 } });
    await settled(d.id);
    const p = await api.patch(`/v1/documents/${d.id}`, root, { title: 'New title', payload: { b: null, c: 3 } });
    expect(p.status, p.text).toBe(200);
    expect(p.body).toMatchObject({ title: 'New title', payload: { a: 1, c: 3 }, version: 2 });
    const t = await api.patch(`/v1/documents/${d.id}`, root, { text: `new body ${SENTENCE}`, expectedVersion: 2 });
    expect(t.status, t.text).toBe(200);
    expect(t.body.version).toBe(3);
    expect(t.body.status).toBe('PENDING_INDEX');
    const done = await settled(d.id);
    expect(done.status).toBe('INDEXED');
    expect(done.version).toBe(3);
    expect((await text(d.id)).body.text).toBe(`new body ${SENTENCE}`);
  });

  it(
    'PATCH rejects indexMode, externalId, storeText, unknown keys and top-level null with 400; nothing ' + 'changes',
    async () => {
      const d = await ingest({ text: 'x' });
      for (const body of [
        { indexMode: 'TEXT' },
        { externalId: 'e' },
        { storeText: false },
        { bogus: 1 },
        { title: null },
        { payload: null },
        { text: null },
      ]) {
        const r = await api.patch(`/v1/documents/${d.id}`, root, body);
        expect(r.status, `${JSON.stringify(body)} ${r.text}`).toBe(400);
      }
      const after = await api.get(`/v1/documents/${d.id}`, root);
      expect(after.body.version).toBe(1);
      expect(after.body.title).toBe(d.title);
    },
  );

  it('expectedVersion mismatch is 409 VERSION_CONFLICT on PUT, PATCH and DELETE', async () => {
    const d = await ingest({ text: 'x' });
    const a = await api.patch(`/v1/documents/${d.id}`, root, { title: 'y', expectedVersion: 5 });
    expect(a.status).toBe(409);
    expect(a.body.errorCode).toBe('VERSION_CONFLICT');
    expect((await api.put(`/v1/documents/${d.id}`, root, { title: 'y', expectedVersion: 2 })).body.errorCode).toBe(
      'VERSION_CONFLICT',
    );
    expect((await api.del(`/v1/documents/${d.id}?expectedVersion=3`, root)).status).toBe(409);
  });

  it('PUT replaces payload in full, keeps the text if none is given; immutable keys only when unchanged', async () => {
    const d = await ingest({ text: 'body', payload: { a: 1 } });
    const r = await api.put(`/v1/documents/${d.id}`, root, {
      title: 'Put title',
      payload: { z: 1 },
      indexMode: 'HYBRID',
    });
    expect(r.status, r.text).toBe(200);
    expect(r.body).toMatchObject({ title: 'Put title', payload: { z: 1 }, version: 2, folderId: d.folderId });
    expect((await api.put(`/v1/documents/${d.id}`, root, { title: 't', indexMode: 'TEXT' })).status).toBe(400);
    expect((await api.put(`/v1/documents/${d.id}`, root, { title: 't', storeText: false })).status).toBe(400);
    expect((await api.put(`/v1/documents/${d.id}`, root, { payload: {} })).status).toBe(400); // title is required
    expect((await api.put(`/v1/documents/${d.id}`, root, { title: 't', text: 'replaced' })).status).toBe(200);
    await settled(d.id);
    expect((await text(d.id)).body.text).toBe('replaced');
  });
});

describe('search indexing', () => {
  const searchIds = async (body: Record<string, unknown>, token = root) => {
    const r = await api.post('/v1/search', token, { mode: 'TEXT', ...body });
    expect(r.status, r.text).toBe(200);
    return r.body.results.map(
      (x: { documentId: string; sourceType: string }) => `${x.sourceType}:${x.documentId}`,
    ) as string[];
  };

  it(
    'after a PUT that changes the text, a search for a word only in the old text finds nothing once the ' +
      'document is INDEXED again',
    async () => {
      const oldWord = `pangolin${randomUUID().slice(0, 6)}`;
      const newWord = `axolotl${randomUUID().slice(0, 6)}`;
      const d = await ingest({ text: `Field notes about the ${oldWord} and its scales.` });
      expect((await settled(d.id)).status).toBe('INDEXED');
      expect(await searchIds({ query: oldWord })).toEqual([`PartnerDocument:${d.id}`]);
      const r = await api.put(`/v1/documents/${d.id}`, root, {
        title: d.title,
        text: `Field notes about the ${newWord} and its gills.`,
      });
      expect(r.status, r.text).toBe(200);
      expect(r.body.status).toBe('PENDING_INDEX');
      expect((await settled(d.id)).status).toBe('INDEXED');
      expect(await searchIds({ query: oldWord })).toEqual([]);
      expect(await searchIds({ query: oldWord, mode: 'HYBRID', minSimilarity: 0.99 })).toEqual([]);
      expect(await searchIds({ query: newWord })).toEqual([`PartnerDocument:${d.id}`]);
      expect(await searchIds({ query: `${newWord} gills`, mode: 'HYBRID', uniqueDocuments: true })).toContain(
        `PartnerDocument:${d.id}`,
      );
    },
  );

  it('storeText false: text discarded, a payload or folder change still moves the search filters', async () => {
    const word = `quetzal${randomUUID().slice(0, 6)}`;
    const up = await uploadFile('bird.txt', 'text/plain', `A ${word} perched in the cloud forest.`, {
      storeText: false,
      payload: { zone: 'a' },
    });
    expect((await settled(up.id)).status).toBe('INDEXED');
    await eventually(async () => (await text(up.id)).status === 404);
    expect(await searchIds({ query: word, filters: { zone: 'a' } })).toEqual([`PartnerDocument:${up.id}`]);
    const p = await api.patch(`/v1/documents/${up.id}`, root, { payload: { zone: 'b' } });
    expect(p.status, p.text).toBe(200);
    await eventually(async () => (await searchIds({ query: word, filters: { zone: 'b' } })).length === 1);
    expect(await searchIds({ query: word, filters: { zone: 'a' } })).toEqual([]);
    expect((await api.get(`/v1/documents/${up.id}`, root)).body.status).toBe('INDEXED');
  });
});

describe('delete, tombstone and versions', () => {
  it(
    'versions list Created and Updated rows (status changes add none); delete leaves a tombstone and ' +
      'removes the text',
    async () => {
      const ext = uniq('ext');
      const d = await ingest({ text: 'x', externalId: ext });
      await settled(d.id);
      await api.patch(`/v1/documents/${d.id}`, root, { title: 'renamed' });
      const v = await eventually(async () => {
        const r = await api.get(`/v1/documents/${d.id}/versions`, root);
        return r.status === 200 && r.body.data.length === 2 ? r.body.data : null;
      });
      expect(v.map((r: any) => [r.version, r.eventType, r.entityKind])).toEqual([
        [1, 'DocumentCreated', 'document'],
        [2, 'DocumentUpdated', 'document'],
      ]);
      expect(v[1].state.title).toBe('renamed');
      expect((await api.get(`/v1/documents/${d.id}/tombstone`, root)).status).toBe(404);
      const del = await api.del(`/v1/documents/${d.id}`, root);
      expect(del.status).toBe(204);
      expect((await api.get(`/v1/documents/${d.id}`, root)).status).toBe(404);
      expect((await text(d.id)).status).toBe(404);
      const t = await eventually(async () => {
        const r = await api.get(`/v1/documents/${d.id}/tombstone`, root);
        return r.status === 200 ? r.body : null;
      });
      expect(t).toMatchObject({ id: d.id, entityKind: 'document', externalId: ext, lastVersion: 2 });
      const rows = (await api.get(`/v1/documents/${d.id}/versions`, root)).body.data;
      expect(rows[rows.length - 1]).toMatchObject({ version: 3, eventType: 'DocumentDeleted', state: null });
      // The externalId is free again.
      expect(
        (await api.post('/v1/documents', root, { title: 't', text: 'x', indexMode: 'TEXT', externalId: ext })).status,
      ).toBe(201);
    },
  );

  it('deleting a file document removes its file (the download URL stops working)', async () => {
    const up = await uploadFile('gone.txt', 'text/plain', 'bye');
    await settled(up.id);
    const dl = (await api.get(`/v1/documents/${up.id}/download-url`, root)).body;
    expect((await api.del(`/v1/documents/${up.id}`, root)).status).toBe(204);
    const res = await fetch(dl.downloadUrl);
    expect(res.status).toBe(403);
    expect(await res.text()).toContain('<Code>AccessDenied</Code>');
  });
});

describe('list and lookup', () => {
  it('list filters by folderId and pages with an encrypted cursor', async () => {
    const f = await api.post('/v1/folders', root, { name: uniq('docs') });
    expect(f.status, f.text).toBe(201);
    const ids = [];
    for (let i = 0; i < 3; i++) ids.push((await ingest({ text: `n${i}`, folderId: f.body.id })).id);
    const p1 = await api.get(`/v1/documents?folderId=${f.body.id}&limit=2`, root);
    expect(p1.status, p1.text).toBe(200);
    expect(p1.body.data.map((d: any) => d.id)).toEqual(ids.slice(0, 2));
    const p2 = await api.get(
      `/v1/documents?folderId=${f.body.id}&limit=2&startFrom=${encodeURIComponent(p1.body.nextCursor)}`,
      root,
    );
    expect(p2.body.data.map((d: any) => d.id)).toEqual(ids.slice(2));
    expect(p2.body.nextCursor).toBeNull();
    expect((await api.get('/v1/documents?limit=101', root)).status).toBe(400);
    // A folder holding a document is not empty.
    expect((await api.del(`/v1/folders/${f.body.id}`, root)).status).toBe(400);
  });

  it('lookup by a schema lookup field (GET and POST); data scope applies', async () => {
    const s = await api.post('/v1/schemas', root, {
      typeName: uniq('L'),
      displayName: 'Lookup docs',
      allowedSurfaces: ['document'],
      indexMode: 'TEXT',
      fields: [
        { fieldId: 'sku', fieldType: 'string' },
        { fieldId: 'n', fieldType: 'number' },
      ],
      lookupFields: ['sku', { fieldName: 'n', rangeEnabled: true }],
    });
    expect(s.status, s.text).toBe(201);
    const type = s.body.typeName;
    const a = await ingest({ schemaId: s.body.id, text: 'a', payload: { sku: 'AB-1', n: 1 } }, u1);
    const b = await ingest({ schemaId: s.body.id, text: 'b', payload: { sku: 'AB-2', n: 5 } }, u2);
    const g = await api.get(`/v1/documents/lookup?type=${type}&field=sku&value=AB-1`, root);
    expect(g.status, g.text).toBe(200);
    expect(g.body.data.map((d: any) => d.id)).toEqual([a.id]);
    const pre = await api.post('/v1/documents/lookup', root, { type, field: 'sku', prefix: 'AB-' });
    expect(pre.body.data.map((d: any) => d.id)).toEqual([a.id, b.id]);
    const range = await api.get(`/v1/documents/lookup?type=${type}&field=n&from=2&to=9`, root);
    expect(range.body.data.map((d: any) => d.id)).toEqual([b.id]);
    const scoped = await api.post('/v1/documents/lookup', u1, { type, field: 'sku', prefix: 'AB-' });
    expect(scoped.body.data.map((d: any) => d.id)).toEqual([a.id]);
    expect((await api.get(`/v1/documents/lookup?type=${type}&field=sku`, root)).status).toBe(400);
    // After a PATCH the index follows the payload.
    await api.patch(`/v1/documents/${a.id}`, root, { payload: { sku: 'ZZ-9' } });
    expect((await api.get(`/v1/documents/lookup?type=${type}&field=sku&value=AB-1`, root)).body.data).toEqual([]);
  });
});

describe('permissions and tenancy', () => {
  it('documents:c|r|u|d are required (uniform 403)', async () => {
    const d = await ingest({ text: 'x' });
    const readOnly = await mint(root, ['documents:r']);
    const r1 = await api.post('/v1/documents', readOnly, { title: 't', text: 'x', indexMode: 'TEXT' });
    expect(r1.status).toBe(403);
    expect(r1.body.errorCode).toBe('FORBIDDEN');
    expect(
      (
        await api.post('/v1/documents/upload', readOnly, {
          title: 't',
          fileName: 'a',
          fileType: 'text/plain',
          indexMode: 'TEXT',
        })
      ).status,
    ).toBe(403);
    expect((await api.patch(`/v1/documents/${d.id}`, readOnly, { title: 'y' })).status).toBe(403);
    expect((await api.del(`/v1/documents/${d.id}`, readOnly)).status).toBe(403);
    expect((await api.get(`/v1/documents/${d.id}`, readOnly)).status).toBe(200);
    const none = await mint(root, ['records:r']);
    expect((await api.get(`/v1/documents/${d.id}`, none)).status).toBe(403);
  });

  it('another tenant, another user scope and a missing id all read the same 404', async () => {
    const d = await ingest({ text: 'x' }, u1);
    const other = (await api.newAccount({ plan: 'enterprise', rateLimitPerMinute: 1_000_000 })).tenants.live.rootKey;
    const missing = await api.get(`/v1/documents/${randomUUID()}`, root);
    expect(missing.status).toBe(404);
    for (const [token, path] of [
      [other, `/v1/documents/${d.id}`],
      [u2, `/v1/documents/${d.id}`],
      [other, `/v1/documents/${d.id}/text`],
      [u2, `/v1/documents/${d.id}/versions`],
      [acct.tenants.test.rootKey, `/v1/documents/${d.id}`],
    ]) {
      const r = await api.get(path, token);
      expect(r.status, path).toBe(404);
      expect(r.body.message).toBe(missing.body.message);
    }
    expect((await api.patch(`/v1/documents/${d.id}`, u2, { title: 'y' })).status).toBe(404);
    expect((await api.del(`/v1/documents/${d.id}`, other)).status).toBe(404);
    const list = await api.get('/v1/documents?limit=100', u2);
    expect(list.body.data.some((x: any) => x.id === d.id)).toBe(false);
  });
});
