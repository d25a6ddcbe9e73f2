import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PDFDocument, StandardFonts } from 'pdf-lib';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { Page } from 'playwright-core';
import { CHROMIUM_SKIP_REASON } from '../support/browser';
import { describeViolations, startConsole, type ConsoleHarness } from '../support/console';

/**
 * The console's Documents screen in Chromium: a person makes a folder, uploads a PDF with the file input (the
 * presigned upload, its progress) and watches it reach INDEXED, reads its retained text and moves it to another
 * folder; a file dropped on the page is uploaded the same way, and a broken one ends FAILED with the reason shown.
 */
async function pdfWith(lines: string[]): Promise<Uint8Array> {
  const pdf = await PDFDocument.create();
  const font = await pdf.embedFont(StandardFonts.Helvetica);
  const page = pdf.addPage();
  lines.forEach((l, i) => page.drawText(l, { x: 50, y: 750 - i * 20, size: 12, font }));
  return pdf.save();
}

/** Drops a file on the page's drop zone as a person dragging it from their desktop would. */
async function dropFile(page: Page, name: string, type: string, bytes: Uint8Array) {
  const data = await page.evaluateHandle(
    ([n, t, b64]) => {
      const bin = atob(b64);
      const arr = new Uint8Array(bin.length);
      for (let i = 0; i < bin.length; i++) arr[i] = bin.charCodeAt(i);
      const dt = new DataTransfer();
      dt.items.add(new File([arr], n, { type: t }));
      return dt;
    },
    [name, type, Buffer.from(bytes).toString('base64')] as const,
  );
  const zone = page.getByTestId('dropzone');
  await zone.dispatchEvent('dragover', { dataTransfer: data });
  await zone.dispatchEvent('drop', { dataTransfer: data });
}

declare const atob: (s: string) => string;
declare class DataTransfer {
  items: { add(f: unknown): void };
}
declare class File {
  constructor(parts: unknown[], name: string, opts: { type: string });
}

// A page answers in well under a second on a quiet machine; the shared CI machine can be far slower.
vi.setConfig({ expect: { poll: { timeout: 15_000, interval: 100 } } });

describe.skipIf(!!CHROMIUM_SKIP_REASON)('the web console: documents and folders', () => {
  let h: ConsoleHarness;
  let key: string;
  const dir = mkdtempSync(join(tmpdir(), 'console-docs-'));
  beforeAll(async () => {
    h = await startConsole();
    key = h.svc.bootstrap.tenants.test.rootKey;
  });
  afterAll(async () => {
    await h?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  const status = (page: Page) => page.getByRole('status').first().innerText();

  it('uploads a PDF with the file input, sees it reach INDEXED, reads its text and moves it to a folder', async () => {
    const pdf = join(dir, 'greenhouse.pdf');
    writeFileSync(pdf, await pdfWith(['Greenhouse rota', 'The tomatoes are watered every morning at six.']));
    const p = await h.newPage();
    const { page } = p;
    await h.signIn(p);
    await page.getByRole('navigation', { name: 'Screens' }).getByRole('link', { name: 'Documents' }).click();
    // The suite's first screen: through the router on a loaded machine its first loads (the screen's chunk, the
    // folder tree from a query replica) have taken over 15 s once in CI.
    await expect.poll(() => page.getByRole('heading', { name: 'In Root' }).count(), { timeout: 45_000 }).toBe(1);

    // A folder, made from the console.
    await page.getByLabel('New folder in Root').fill('Garden');
    await page.getByRole('button', { name: 'Create folder' }).click();
    await expect.poll(() => page.getByRole('heading', { name: 'In Root / Garden' }).count()).toBe(1);
    await page.getByRole('navigation', { name: 'Folders' }).getByRole('link', { name: 'Root', exact: true }).click();
    await expect.poll(() => page.getByRole('heading', { name: 'In Root' }).count()).toBe(1);

    await page.getByLabel('Choose a file').setInputFiles(pdf);
    expect(await page.getByLabel('Title').inputValue()).toBe('greenhouse');
    expect(await h.axe(page).then(describeViolations)).toEqual([]);
    await page.getByRole('button', { name: 'Upload' }).click();
    await expect
      .poll(() => page.getByRole('heading', { name: 'Document greenhouse' }).count(), { timeout: 15_000 })
      .toBe(1);
    // The status moves on its own while the page is open, to INDEXED.
    await expect.poll(() => status(page), { timeout: 60_000, interval: 250 }).toContain('INDEXED');
    expect(await page.locator('dl.facts').innerText()).toMatch(/File\s+application\/pdf/);
    await page.getByRole('button', { name: 'Read the text' }).click();
    await expect.poll(() => page.getByLabel('Extracted text').count()).toBe(1);
    expect(await page.getByLabel('Extracted text').innerText()).toContain(
      'The tomatoes are watered every morning at six.',
    );
    expect(await h.axe(page).then(describeViolations)).toEqual([]);
    await h.screenshot(page, 'document');

    await page.getByLabel('Move to folder').selectOption({ label: 'Root / Garden' });
    await page.getByRole('button', { name: 'Move' }).click();
    await expect.poll(() => page.getByText('Moved to Root / Garden.').count()).toBe(1);
    // Through the API: the document is in Garden, and listed there.
    const folders = (await h.svc.api.get('/v1/folders', key)).body.data as Array<{ id: string; name: string }>;
    const garden = folders.find((f) => f.name === 'Garden')!;
    const docs = (await h.svc.api.get(`/v1/documents?folderId=${garden.id}`, key)).body.data as Array<{
      title: string;
      status: string;
    }>;
    expect(docs.map((d) => [d.title, d.status])).toEqual([['greenhouse', 'INDEXED']]);
    // The page's trail now leads to the new folder, which lists it.
    await page.locator('.crumbs').getByRole('link', { name: 'Root / Garden' }).click();
    const table = page.getByRole('table', { name: 'Documents in Root / Garden' });
    await expect.poll(() => table.innerText()).toMatch(/greenhouse\s+INDEXED\s+application\/pdf/);
    expect(await h.axe(page).then(describeViolations)).toEqual([]);
    await h.screenshot(page, 'documents');
    expect(p.elsewhere).toEqual([]);
    expect(p.problems).toEqual([]);
  });

  it('uploads a file dropped on the page; a broken PDF ends FAILED with the reason shown', async () => {
    const p = await h.newPage();
    const { page } = p;
    await h.signIn(p);
    await page.goto(`${h.url}#/documents`);
    await expect.poll(() => page.getByRole('heading', { name: 'In Root' }).count()).toBe(1);
    await dropFile(
      page,
      'notes.txt',
      'text/plain',
      new TextEncoder().encode('The hens are fed at seven and again at four.'),
    );
    await expect.poll(() => page.getByLabel('Title').inputValue()).toBe('notes');
    // The file's PUT to the presigned URL, held back a moment so the progress can be seen.
    await page.route('**/storage/uploads/**', async (r) => {
      await new Promise((done) => setTimeout(done, 1500));
      await r.continue();
    });
    await page.getByRole('button', { name: 'Upload' }).click();
    await expect.poll(() => page.getByRole('progressbar', { name: 'Upload progress' }).count()).toBe(1);
    await h.screenshot(page, 'document-uploading');
    await expect.poll(() => page.getByRole('heading', { name: 'Document notes' }).count(), { timeout: 15_000 }).toBe(1);
    await expect.poll(() => status(page), { timeout: 60_000, interval: 250 }).toContain('INDEXED');

    await page.goto(`${h.url}#/documents`);
    await dropFile(
      page,
      'broken.pdf',
      'application/pdf',
      new TextEncoder().encode('%PDF-1.7 this is not a PDF at all'),
    );
    await expect.poll(() => page.getByLabel('Title').inputValue()).toBe('broken');
    await page.getByRole('button', { name: 'Upload' }).click();
    await expect
      .poll(() => page.getByRole('heading', { name: 'Document broken' }).count(), { timeout: 15_000 })
      .toBe(1);
    await expect.poll(() => status(page), { timeout: 60_000, interval: 250 }).toMatch(/FAILED: .+\(INDEXING_FAILED\)/);
    expect(await h.axe(page).then(describeViolations)).toEqual([]);
    await h.screenshot(page, 'document-failed');
    expect(p.elsewhere).toEqual([]);
    expect(p.problems).toEqual([]);
  });

  it("shows the API's refusal of an empty title next to it, and stores nothing", async () => {
    const before = ((await h.svc.api.get('/v1/documents?limit=100', key)).body.data as unknown[]).length;
    const p = await h.newPage();
    const { page } = p;
    await h.signIn(p);
    await page.goto(`${h.url}#/documents`);
    await expect.poll(() => page.getByRole('heading', { name: 'In Root' }).count()).toBe(1);
    await dropFile(page, 'x.txt', 'text/plain', new TextEncoder().encode('anything'));
    await page.getByLabel('Title').fill('');
    await page.getByRole('button', { name: 'Upload' }).click();
    const title = page.getByLabel('Title');
    await expect.poll(() => title.getAttribute('aria-invalid')).toBe('true');
    const errorId = ((await title.getAttribute('aria-describedby')) ?? '').split(' ').pop();
    expect(await page.locator(`[id="${errorId}"]`).innerText()).toMatch(/expected string to have >=1 characters/);
    expect(await h.axe(page).then(describeViolations)).toEqual([]);
    await h.screenshot(page, 'document-refused');
    expect(((await h.svc.api.get('/v1/documents?limit=100', key)).body.data as unknown[]).length).toBe(before);
    expect(p.problems).toEqual([]);
  });

  it('is live: a document added elsewhere shows in the open folder and its status moves on, no click', async () => {
    const p = await h.newPage();
    const { page } = p;
    await h.signIn(p);
    await page.goto(`${h.url}#/documents`);
    await expect.poll(() => page.getByRole('heading', { name: 'In Root' }).count()).toBe(1);
    const table = page.getByRole('table', { name: /^Documents in Root/ });
    await expect.poll(() => table.getByRole('row').count()).toBeGreaterThan(0);
    expect(await table.innerText()).not.toContain('Added elsewhere');
    const created = await h.svc.api.post('/v1/documents', key, {
      title: 'Added elsewhere',
      text: 'Notes written through the API.',
      indexMode: 'TEXT',
    });
    expect(created.status).toBe(201);
    await expect.poll(() => table.innerText()).toContain('Added elsewhere');
    const row = table.getByRole('row').filter({ hasText: 'Added elsewhere' });
    await expect.poll(() => row.innerText(), { timeout: 30_000 }).toContain('INDEXED');
    expect(p.elsewhere).toEqual([]);
    expect(p.problems).toEqual([]);
  });
});
