import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import JSZip from 'jszip';
import { PDFDocument, StandardFonts } from 'pdf-lib';
import { Document, Packer, Paragraph, TextRun } from 'docx';
import { EXTRACTION_LIMITS, extractText, MAX_EXTRACTION_ATTEMPTS } from '@svc/projectors';
import { streams } from '@svc/domain';
import { eventually, startService, type Api, type TestService } from '../support/service';
import { tempDir } from '../support/engines';

/**
 * Hardening: a small DOCX (a zip) that inflates to hundreds of MB killed the
 * service, and the document worker extracted it again after every restart.
 * Extraction now runs in a worker thread with memory and time limits, the
 * zip's inflated size is capped (declared sizes first, then while inflating),
 * PDFs have a page cap and extracted text a size cap (docs/documents.md
 * "Extraction limits"). A file over a limit ends FAILED with an indexFailure
 * naming the limit, once; the service stays responsive and serves everyone
 * else meanwhile; a restart does not extract it again.
 */
const MiB = 1024 * 1024;
const DOCX_TYPE = 'application/vnd.openxmlformats-officedocument.wordprocessingml.document';
const SETTLED = ['INDEXED', 'SKIPPED', 'STORED', 'FAILED'];
const SENTENCE = 'The quick brown fox files its quarterly report on Tuesday.';
/** A poll of /healthz (or the timer between polls) slower than this means the event loop was blocked. */
const RESPONSIVE_MS = 2_000;

let data: { dir: string; remove: () => void };
let svc: TestService;
let api: Api;
let root: string;
let otherRoot: string;
let bomb: Buffer;
let bombId: string;

const uniq = (p: string) => `${p}_${randomUUID().slice(0, 8)}`;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

beforeAll(async () => {
  data = tempDir('svc-extract-');
  svc = await startService({ dataDir: data.dir });
  api = svc.api;
  const enterprise = { plan: 'enterprise', rateLimitPerMinute: 1_000_000, creditLimit: 1_000_000_000 };
  root = (await api.newAccount(enterprise)).tenants.live.rootKey;
  otherRoot = (await api.newAccount(enterprise)).tenants.live.rootKey;
  // 150 MiB of very compressible XML: about 0.5 MB on the wire, the size that crashed the service.
  bomb = await docxWithBody(150);
}, 120_000);

afterAll(async () => {
  await svc?.stop();
  data?.remove();
});

/** A valid DOCX whose word/document.xml carries about `mib` MiB of paragraphs (DEFLATE). */
async function docxWithBody(mib: number): Promise<Buffer> {
  const base = await Packer.toBuffer(
    new Document({ sections: [{ children: [new Paragraph({ children: [new TextRun('Heading line')] })] }] }),
  );
  const zip = await JSZip.loadAsync(base);
  const xml = await zip.file('word/document.xml')!.async('string');
  const at = xml.indexOf('<w:body>') + '<w:body>'.length;
  const para = '<w:p><w:r><w:t>All work and no play makes Jack a dull boy.</w:t></w:r></w:p>';
  zip.file('word/document.xml', xml.slice(0, at) + para.repeat(Math.ceil((mib * MiB) / para.length)) + xml.slice(at));
  return zip.generateAsync({ type: 'nodebuffer', compression: 'DEFLATE', compressionOptions: { level: 9 } });
}

/** A copy of `zip` whose headers (central directory and local) claim `name` inflates to `declared` bytes. */
function understate(zip: Buffer, name: string, declared: number): Buffer {
  const out = Buffer.from(zip);
  let patched = 0;
  for (let i = 0; i + 46 <= out.length; i++) {
    const sig = out.readUInt32LE(i);
    if (sig === 0x02014b50 && out.toString('utf8', i + 46, i + 46 + out.readUInt16LE(i + 28)) === name) {
      out.writeUInt32LE(declared, i + 24);
      patched++;
    } else if (sig === 0x04034b50 && out.toString('utf8', i + 30, i + 30 + out.readUInt16LE(i + 26)) === name) {
      out.writeUInt32LE(declared, i + 22);
      patched++;
    }
  }
  expect(patched).toBe(2);
  return out;
}

/** A PDF of `pages` pages: the first with a short line, or each with `lines` lines of text. */
async function pdfPages(pages: number, lines = 0): Promise<Uint8Array> {
  const pdf = await PDFDocument.create();
  const font = await pdf.embedFont(StandardFonts.Helvetica);
  for (let p = 0; p < pages; p++) {
    if (!lines) {
      const page = pdf.addPage([200, 200]);
      if (p === 0) page.drawText(SENTENCE.slice(0, 20), { x: 10, y: 100, size: 10, font });
      continue;
    }
    const page = pdf.addPage([600, 800]);
    for (let l = 0; l < lines; l++) page.drawText(SENTENCE, { x: 10, y: 10 + l * 12, size: 10, font });
  }
  return pdf.save();
}

async function uploadFile(
  fileName: string,
  fileType: string,
  body: Uint8Array | string,
  extra: Record<string, unknown> = {},
) {
  const r = await api.post('/v1/documents/upload', root, {
    title: uniq('File'),
    indexMode: 'HYBRID',
    fileName,
    fileType,
    ...extra,
  });
  expect(r.status, r.text).toBe(201);
  const up = r.body;
  const res = await fetch(up.uploadUrl, {
    method: 'PUT',
    headers: { 'content-type': fileType, [up.requiredHeaderName]: up.requiredHeaderValue },
    body: typeof body === 'string' ? body : Buffer.from(body),
  });
  expect(res.status, await res.clone().text()).toBe(200);
  return up as { id: string };
}

async function settled(id: string, timeoutMs = 90_000) {
  return eventually(
    async () => {
      const r = await api.get(`/v1/documents/${id}`, root);
      return r.status === 200 && SETTLED.includes(r.body.status) ? r.body : null;
    },
    timeoutMs,
    100,
  );
}

/**
 * Polls /healthz every 100 ms until stopped; records how long each answer
 * took and how late each timer fired. The service runs in this process, so a
 * blocked event loop shows in both.
 */
function watchHealth() {
  const slow: number[] = [];
  let failures = 0;
  let polls = 0;
  let running = true;
  const loop = (async () => {
    while (running) {
      let t0 = Date.now();
      const r = await fetch(`${svc.url}/healthz`, { signal: AbortSignal.timeout(60_000) }).catch(() => null);
      if (!r?.ok) failures++;
      await r?.text().catch(() => '');
      slow.push(Date.now() - t0);
      polls++;
      t0 = Date.now();
      await sleep(100);
      slow.push(Date.now() - t0 - 100);
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
      return { polls, failures, worst: Math.max(0, ...slow) };
    },
  };
}

/** Another tenant keeps writing (inline documents, one after another) until stopped. */
function otherTenantWrites() {
  const statuses: number[] = [];
  let worst = 0;
  let running = true;
  const loop = (async () => {
    while (running) {
      const t0 = Date.now();
      const r = await api.post('/v1/documents', otherRoot, {
        title: uniq('Other'),
        indexMode: 'HYBRID',
        text: `${SENTENCE} ${randomUUID()}`,
      });
      worst = Math.max(worst, Date.now() - t0);
      statuses.push(r.status);
      await sleep(200);
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
      return { statuses, worst };
    },
  };
}

/** Uploads `body`, waits for it to settle while watching /healthz and another tenant's writes. */
async function uploadWatched(fileName: string, fileType: string, body: Uint8Array | string) {
  const health = watchHealth();
  const writes = otherTenantWrites();
  const up = await uploadFile(fileName, fileType, body);
  const doc = await settled(up.id).finally(() => Promise.all([health.stop(), writes.stop()]));
  const [h, w] = await Promise.all([health.stop(), writes.stop()]);
  expect(h.failures, 'failed /healthz polls').toBe(0);
  expect(h.polls).toBeGreaterThan(0);
  expect(h.worst, 'slowest /healthz poll or timer (ms)').toBeLessThan(RESPONSIVE_MS);
  expect(w.statuses.length).toBeGreaterThan(0);
  expect(
    w.statuses.every((s) => s === 201),
    `other tenant's writes: ${w.statuses.join(',')}`,
  ).toBe(true);
  expect(w.worst, 'slowest write of the other tenant (ms)').toBeLessThan(RESPONSIVE_MS * 2);
  return { up, doc };
}

function expectLimitFailure(doc: any, pattern: RegExp) {
  expect(doc.status, JSON.stringify(doc.indexFailure ?? null)).toBe('FAILED');
  expect(doc.indexFailure.code).toBe('INDEXING_FAILED');
  expect(doc.indexFailure.message).toMatch(pattern);
}

describe('extraction limits: files that break a limit end FAILED, the service carries on', () => {
  it(
    'a DOCX zip bomb (0.5 MB -> 150 MiB of XML) is FAILED naming the inflated-size limit; /healthz and ' +
      'other tenants are unaffected',
    async () => {
      expect(bomb.length).toBeLessThan(1 * MiB);
      const { up, doc } = await uploadWatched('bomb.docx', DOCX_TYPE, bomb);
      bombId = up.id;
      expectLimitFailure(doc, /64 MiB/);
      expect(doc.indexFailure.message).toMatch(/unzip/i);
      expect((await api.get(`/v1/documents/${up.id}/text`, root)).status).toBe(404);
    },
  );

  it('a zip bomb whose headers understate its inflated size is stopped while inflating, same limit', async () => {
    const liar = understate(bomb, 'word/document.xml', 4096);
    const { doc } = await uploadWatched('liar.docx', DOCX_TYPE, liar);
    expectLimitFailure(doc, /64 MiB/);
  });

  it(
    'a DOCX under the inflated-size limit whose XML is too heavy to parse ends FAILED by the memory (or ' +
      'time) limit; the service stays responsive',
    async () => {
      // ~24 MiB of XML (about 100 KB zipped): the shape that held /healthz for 23 s when parsed on the main thread.
      const heavy = await docxWithBody(24);
      const { doc } = await uploadWatched('heavy.docx', DOCX_TYPE, heavy);
      expectLimitFailure(doc, /MiB memory limit|s time limit/);
    },
    150_000,
  );

  it(`a PDF over the page limit is FAILED naming the limit`, async () => {
    const pdf = await pdfPages(EXTRACTION_LIMITS.maxPdfPages + 1);
    const { doc } = await uploadWatched('long.pdf', 'application/pdf', pdf);
    expectLimitFailure(doc, /2001 pages.*2000-page/);
  });

  it('extracted text over the text limit is FAILED naming the limit', async () => {
    const big = `${SENTENCE}\n`.repeat(Math.ceil((17 * MiB) / (SENTENCE.length + 1)));
    const up = await uploadFile('big.txt', 'text/plain', big);
    expectLimitFailure(await settled(up.id), /16 MiB/);
  });

  it('a store-only document over a limit is STORED without text, as for the file-size limit', async () => {
    const up = await uploadFile('bomb-none.docx', DOCX_TYPE, bomb, { indexMode: 'NONE' });
    const d = await settled(up.id);
    expect(d.status).toBe('STORED');
    expect((await api.get(`/v1/documents/${up.id}/text`, root)).status).toBe(404);
  });

  it('a small DOCX and PDF still extract (in the worker thread)', async () => {
    const docx = await Packer.toBuffer(
      new Document({ sections: [{ children: [new Paragraph({ children: [new TextRun(SENTENCE)] })] }] }),
    );
    const pdf = await PDFDocument.create();
    const font = await pdf.embedFont(StandardFonts.Helvetica);
    pdf.addPage().drawText(SENTENCE, { x: 50, y: 700, size: 12, font });
    for (const [name, type, body] of [
      ['ok.docx', DOCX_TYPE, docx],
      ['ok.pdf', 'application/pdf', await pdf.save()],
    ] as const) {
      const up = await uploadFile(name, type, body);
      expect((await settled(up.id)).status).toBe('INDEXED');
      expect((await api.get(`/v1/documents/${up.id}/text`, root)).body.text).toContain(SENTENCE);
    }
  });

  it(
    'after a restart on the same DATA_DIR the bomb is not extracted again: it stays FAILED and the service ' + 'is up',
    async () => {
      expect(bombId).toBeTruthy();
      const before = await svc.service.store.readStream(streams.document(bombId));
      await svc.stop();
      svc = await startService({ dataDir: data.dir });
      api = svc.api;
      // The worker follows the log in order: once an upload made now is settled, anything before it was seen again.
      const probe = await uploadFile('after-restart.txt', 'text/plain', SENTENCE);
      expect((await settled(probe.id)).status).toBe('INDEXED');
      const after = await svc.service.store.readStream(streams.document(bombId));
      expect(after.map((e) => e.type)).toEqual(before.map((e) => e.type));
      const d = (await api.get(`/v1/documents/${bombId}`, root)).body;
      expectLimitFailure(d, /64 MiB/);
      expect((await fetch(`${svc.url}/healthz`)).status).toBe(200);
    },
    120_000,
  );

  it(
    `an extraction interrupted ${MAX_EXTRACTION_ATTEMPTS} times (the process stopped mid-way) is FAILED, ` +
      `not tried for ever`,
    async () => {
      // A long PDF within every limit: its extraction takes seconds even on a quiet machine (15 s here), so the stop
      // lands mid-way. A DOCX heavy enough to be slow trips the memory limit in ~4 s, which a loaded CI run missed.
      const up = await uploadFile('interrupted.pdf', 'application/pdf', await pdfPages(2000, 60));
      const status = async () => (await api.get(`/v1/documents/${up.id}`, root)).body.status as string;
      const starts = async () =>
        (await svc.service.store.readStream(streams.document(up.id))).filter(
          (e) => e.type === 'DocumentExtractionStarted',
        ).length;
      for (let attempt = 1; attempt <= MAX_EXTRACTION_ATTEMPTS; attempt++) {
        // Extraction of this file takes seconds: stop the service while it runs (as a crash would), then start it
        // again.
        await eventually(async () => (await starts()) === attempt && (await status()) === 'EXTRACTING', 30_000, 50);
        await svc.stop();
        svc = await startService({ dataDir: data.dir });
        api = svc.api;
      }
      const d = await settled(up.id, 30_000);
      expectLimitFailure(d, new RegExp(`interrupted ${MAX_EXTRACTION_ATTEMPTS} times`));
      expect(await starts()).toBe(MAX_EXTRACTION_ATTEMPTS);
    },
    240_000,
  );
});

describe('extraction limits in the extractor (limits lowered to trip them)', () => {
  it('the limits are named constants with the documented values', () => {
    expect(EXTRACTION_LIMITS).toEqual({
      maxFileBytes: 20 * MiB,
      maxInflatedBytes: 64 * MiB,
      maxPdfPages: 2000,
      maxTextBytes: 16 * MiB,
      heapMb: 512,
      timeoutMs: 60_000,
    });
  });

  it('the time limit terminates the extraction thread', async () => {
    const pdf = Buffer.from(await pdfPages(3));
    const t0 = Date.now();
    const out = await extractText('application/pdf', pdf, { limits: { ...EXTRACTION_LIMITS, timeoutMs: 5 } });
    expect(out).toEqual({ kind: 'limit', message: expect.stringMatching(/longer than the 5 ms time limit/) });
    expect(Date.now() - t0).toBeLessThan(5_000);
  });

  it('the memory limit ends the extraction thread, not the process', async () => {
    const docx = await docxWithBody(4);
    const out = await extractText(DOCX_TYPE, docx, { limits: { ...EXTRACTION_LIMITS, heapMb: 32 } });
    expect(out).toEqual({ kind: 'limit', message: expect.stringMatching(/more than the 32 MiB memory limit/) });
  });

  it('a corrupt DOCX still throws (FAILED as unreadable); a stopped extraction rejects without a result', async () => {
    await expect(extractText(DOCX_TYPE, Buffer.from('PK\u0003\u0004 not a zip'))).rejects.toThrow();
    const ac = new AbortController();
    const p = extractText(DOCX_TYPE, await docxWithBody(4), { signal: ac.signal });
    setTimeout(() => ac.abort(), 50);
    await expect(p).rejects.toThrow(/aborted|stopped/i);
  });
});
