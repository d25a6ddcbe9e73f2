import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PDFDocument, StandardFonts } from 'pdf-lib';
import { eventually, startService, type Api, type TestService } from '../support/service';
import { startObjectStore, type TestObjectStore } from '../support/object-store';

/**
 * Documents on an S3-compatible object store (OBJECT_STORE_URL; issue "Blobs
 * live in DATA_DIR by default and in an S3-compatible store when
 * OBJECT_STORE_URL is set"; decisions §1 presigned URLs served by the object
 * store; docs/documents.md "Object store"). The store is s3rver in this
 * process; s3rver does not verify SigV4 itself, so tests/src/support/object-store.ts
 * puts a SigV4 verifier for presigned requests in front of it.
 */
let s3: TestObjectStore;
let svc: TestService;
let api: Api;
let root: string;
/** The service's log lines, shown when a document does not settle. */
const logs: string[] = [];

const SENTENCE = 'The quick brown fox files its quarterly report on Tuesday.';
const SETTLED = ['INDEXED', 'SKIPPED', 'STORED', 'FAILED'];
const uniq = (p: string) => `${p}_${randomUUID().slice(0, 8)}`;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

beforeAll(async () => {
  s3 = await startObjectStore();
  svc = await startService({ env: { OBJECT_STORE_URL: s3.url }, log: (m) => logs.push(m) });
  api = svc.api;
  const acct = await api.newAccount({ plan: 'enterprise', rateLimitPerMinute: 1_000_000, creditLimit: 1_000_000_000 });
  root = acct.tenants.live.rootKey;
});

afterAll(async () => {
  await svc?.stop();
  await s3?.stop();
});

async function settled(id: string, want?: string) {
  return eventually(async () => {
    const r = await api.get(`/v1/documents/${id}`, root);
    if (r.status !== 200) throw new Error(`GET /v1/documents/${id}: ${r.status}`);
    // Thrown, so a timeout says where the document stopped.
    if (!(want ? r.body.status === want : SETTLED.includes(r.body.status))) throw new Error(`status ${r.body.status}`);
    return r.body;
  }, 60_000).catch((e: Error) => {
    throw new Error(`${e.message}; the service's last log lines:\n${logs.slice(-30).join('\n')}`);
  });
}

async function requestUpload(body: Record<string, unknown>) {
  const r = await api.post('/v1/documents/upload', root, { title: uniq('File'), indexMode: 'HYBRID', ...body });
  expect(r.status, r.text).toBe(201);
  return r.body;
}

function putFile(
  up: { uploadUrl: string; requiredHeaderName: string; requiredHeaderValue: string },
  body: string | Buffer,
  contentType: string | null,
  header: string | null = up.requiredHeaderValue,
) {
  const headers: Record<string, string> = {};
  if (contentType !== null) headers['content-type'] = contentType;
  if (header !== null) headers[up.requiredHeaderName] = header;
  return fetch(up.uploadUrl, { method: 'PUT', headers, body });
}

async function pdfWith(lines: string[]): Promise<Uint8Array> {
  const pdf = await PDFDocument.create();
  const font = await pdf.embedFont(StandardFonts.Helvetica);
  const page = pdf.addPage();
  lines.forEach((l, i) => page.drawText(l, { x: 50, y: 750 - i * 20, size: 12, font }));
  return pdf.save();
}

/** The object store's own refusal: S3's XML error, not the API's JSON error body. */
async function expectStore403(res: Response) {
  expect(res.status).toBe(403);
  expect(res.headers.get('content-type')).toMatch(/^application\/xml/);
  const text = await res.text();
  expect(text).toMatch(/<Error><Code>(SignatureDoesNotMatch|AccessDenied)<\/Code>/);
  expect(text).not.toContain('errorCode');
  expect(() => JSON.parse(text)).toThrow();
}

describe('documents on an S3-compatible object store', () => {
  it('the upload URL is an S3 presigned PUT on the object store, 15 minutes, a signed required header', async () => {
    const up = await requestUpload({ fileName: 'a.txt', fileType: 'text/plain' });
    expect(up.status).toBe('PENDING_UPLOAD');
    expect(up.uploadUrl.startsWith(`${s3.endpoint}/${s3.bucket}/`)).toBe(true);
    expect(up.uploadUrl).not.toContain('/storage/');
    const u = new URL(up.uploadUrl);
    expect(u.searchParams.get('X-Amz-Algorithm')).toBe('AWS4-HMAC-SHA256');
    expect(u.searchParams.get('X-Amz-Expires')).toBe('900');
    expect(u.searchParams.get('X-Amz-SignedHeaders')!.split(';').sort()).toEqual([
      'content-type',
      'host',
      'x-amz-meta-upload-grant',
    ]);
    expect(up.requiredHeaderName).toBe('x-amz-meta-upload-grant');
    expect(up.requiredHeaderValue.length).toBeGreaterThanOrEqual(20);
    const ttl = Date.parse(up.expiresAt) - Date.now();
    expect(ttl).toBeGreaterThan(14 * 60_000);
    expect(ttl).toBeLessThanOrEqual(15 * 60_000 + 5_000);
    // The service no longer serves /storage when an object store is configured.
    expect((await fetch(`${svc.url}/storage/uploads/${up.id}`, { method: 'PUT', body: 'x' })).status).toBe(404);
  });

  it(
    'a PDF with a known sentence: presigned PUT to the store -> INDEXED, text contains the sentence; the ' +
      'download URL is a presigned GET on the store',
    async () => {
      const pdf = Buffer.from(await pdfWith(['Report', SENTENCE]));
      const up = await requestUpload({ fileName: 'report.pdf', fileType: 'application/pdf' });
      const res = await putFile(up, pdf, 'application/pdf');
      expect(res.status, await res.clone().text()).toBe(200);
      const d = await settled(up.id);
      expect(d.status, JSON.stringify(d)).toBe('INDEXED');
      expect(d.fileSize).toBe(pdf.length);
      expect(d.fileType).toBe('application/pdf');
      const t = await api.get(`/v1/documents/${up.id}/text`, root);
      expect(t.status).toBe(200);
      expect(t.body.text).toContain(SENTENCE);
      const dl = await api.get(`/v1/documents/${up.id}/download-url`, root);
      expect(dl.status, dl.text).toBe(200);
      expect(Object.keys(dl.body).sort()).toEqual(['downloadUrl', 'expiresAt']);
      expect(dl.body.downloadUrl.startsWith(`${s3.endpoint}/${s3.bucket}/`)).toBe(true);
      const got = await fetch(dl.body.downloadUrl);
      expect(got.status).toBe(200);
      expect(got.headers.get('content-type')).toBe('application/pdf');
      expect(got.headers.get('content-disposition')).toContain('report.pdf');
      expect(Buffer.from(await got.arrayBuffer()).equals(pdf)).toBe(true);
      await expectStore403(
        await fetch(
          dl.body.downloadUrl.replace(
            /X-Amz-Signature=./,
            (m: string) => m.slice(0, -1) + (m.endsWith('a') ? 'b' : 'a'),
          ),
        ),
      );
    },
  );

  it(
    'missing or changed required header, or a different Content-Type: the store refuses with its own 403 ' +
      'and nothing is recorded',
    async () => {
      const up = await requestUpload({ fileName: 'a.txt', fileType: 'text/plain' });
      await expectStore403(await putFile(up, 'x', 'text/plain', null));
      await expectStore403(await putFile(up, 'x', 'text/plain', up.requiredHeaderValue + 'x'));
      await expectStore403(await putFile(up, 'x', 'application/pdf'));
      await sleep(1_500); // several poller passes
      expect((await api.get(`/v1/documents/${up.id}`, root)).body.status).toBe('PENDING_UPLOAD');
      // The refusals spent nothing: the right request still works.
      expect((await putFile(up, SENTENCE, 'text/plain')).status).toBe(200);
      expect((await settled(up.id)).status).toBe('INDEXED');
    },
  );

  it('single use: the first object seen is recorded; a later PUT with the same URL is never recorded', async () => {
    const up = await requestUpload({ fileName: 'a.txt', fileType: 'text/plain' });
    expect((await putFile(up, 'first words', 'text/plain')).status).toBe(200);
    await settled(up.id);
    // S3 accepts the second PUT (a presigned URL is valid until it expires), but the service never records it.
    await putFile(up, 'second words', 'text/plain');
    await sleep(1_500);
    const d = await api.get(`/v1/documents/${up.id}`, root);
    expect(d.body.fileSize).toBe('first words'.length);
    expect((await api.get(`/v1/documents/${up.id}/text`, root)).body.text).toBe('first words');
    const got = await fetch((await api.get(`/v1/documents/${up.id}/download-url`, root)).body.downloadUrl);
    expect(await got.text()).toBe('first words');
  });

  it('deleting the document removes its file from the store', async () => {
    const up = await requestUpload({ fileName: 'a.txt', fileType: 'text/plain' });
    expect((await putFile(up, SENTENCE, 'text/plain')).status).toBe(200);
    await settled(up.id);
    const dl = await api.get(`/v1/documents/${up.id}/download-url`, root);
    expect((await fetch(dl.body.downloadUrl)).status).toBe(200);
    expect((await api.del(`/v1/documents/${up.id}`, root)).status).toBe(204);
    await eventually(async () => (await fetch(dl.body.downloadUrl)).status === 404, 5_000);
  });
});
