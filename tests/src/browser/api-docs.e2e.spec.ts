import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser } from 'playwright-core';
import { CHROMIUM_SKIP_REASON, launchChromium } from '../support/browser';
import { startService, type TestService } from '../support/service';

/**
 * GET /docs in a real Chromium: the API reference rendered from the served /openapi.json lists every operation
 * of it, with every request to anything but the service refused (the page must work offline).
 */
const METHODS = ['get', 'post', 'put', 'patch', 'delete'];

/** The little of the page's DOM the functions run in the page use (this project compiles without the DOM's types). */
interface PageElement {
  id: string;
  getAttribute(name: string): string | null;
  querySelector(selector: string): { innerText: string } | null;
}
declare const document: { querySelectorAll(selector: string): Iterable<PageElement> };

describe.skipIf(!!CHROMIUM_SKIP_REASON)('the API reference page (/docs)', () => {
  let svc: TestService;
  let browser: Browser;
  beforeAll(async () => {
    [svc, browser] = await Promise.all([startService(), launchChromium()]);
  });
  afterAll(async () => {
    await browser?.close();
    await svc?.stop();
  });

  it('lists every operation of /openapi.json, under its summary, with nothing fetched from elsewhere', async () => {
    const doc = (await (await fetch(`${svc.url}/openapi.json`)).json()) as {
      paths: Record<string, Record<string, { summary?: string }>>;
    };
    // Scalar names each operation `<document>/tag/<tag>/<METHOD><path>` in its sidebar and its content.
    const expected = new Map<string, string>();
    for (const [path, item] of Object.entries(doc.paths))
      for (const [method, op] of Object.entries(item))
        if (METHODS.includes(method)) expected.set(`${method.toUpperCase()}${path}`, op.summary ?? '');
    expect(expected.size).toBeGreaterThan(50);

    const page = await browser.newPage();
    const origin = new URL(svc.url).origin;
    const elsewhere: string[] = [];
    const problems: string[] = [];
    await page.route('**/*', (r) => {
      const url = r.request().url();
      if (new URL(url).origin === origin || url.startsWith('data:')) return r.continue();
      elsewhere.push(url);
      return r.abort();
    });
    page.on('console', (m) => m.type() === 'error' && problems.push(m.text()));
    page.on('pageerror', (e) => problems.push(String(e)));
    const answer = await page.goto(`${svc.url}/docs`);
    expect(answer?.status()).toBe(200);
    expect(answer?.headers()['content-security-policy']).toContain("connect-src 'self'");

    const operationKey = (id: string) => /\/tag\/[^/]+\/((?:GET|POST|PUT|PATCH|DELETE)\/.*)$/.exec(id)?.[1];
    // The sidebar comes first; the operations' sections are rendered in the background after it.
    const operationIds = /\/tag\/[^/]+\/(GET|POST|PUT|PATCH|DELETE)\/[^.]*$/.source;
    await page
      .waitForFunction(
        ([n, re]) =>
          [...document.querySelectorAll('[id]:not(li)')].filter((e) => new RegExp(re).test(e.id)).length >= n,
        [expected.size, operationIds] as const,
        { timeout: 60_000 },
      )
      .catch(() => {}); // the assertions below say what is missing
    const rendered = await page.evaluate(() => ({
      sidebar: [...document.querySelectorAll('li[data-sidebar-id]')].map((li) => ({
        id: li.getAttribute('data-sidebar-id') ?? '',
        label: li.querySelector('button')?.innerText ?? '',
      })),
      sections: [...document.querySelectorAll('[id]')].map((e) => e.id),
    }));
    const inSidebar = new Map<string, string>();
    for (const s of rendered.sidebar) {
      const key = operationKey(s.id);
      if (key) inSidebar.set(key, s.label);
    }
    const sections = new Set(rendered.sections.map(operationKey).filter(Boolean));

    const missing = [...expected.keys()].filter((k) => !inSidebar.has(k));
    expect(missing, 'operations of /openapi.json not listed on /docs').toEqual([]);
    expect(
      [...inSidebar.keys()].filter((k) => !expected.has(k)),
      'operations listed that /openapi.json does not have',
    ).toEqual([]);
    // Each listed under its summary (the label also carries the method badge).
    const unlabelled = [...expected].filter(([k, summary]) => !inSidebar.get(k)!.includes(summary.slice(0, 60)));
    expect(unlabelled).toEqual([]);
    // And each has its section in the page's content.
    expect([...expected.keys()].filter((k) => !sections.has(k))).toEqual([]);
    expect(elsewhere).toEqual([]);
    expect(problems).toEqual([]);
    await page.close();
  });

  it('serves the renderer itself, compressed when the client accepts it', async () => {
    const gz = await fetch(`${svc.url}/docs/api-reference.js`, { headers: { 'accept-encoding': 'gzip' } });
    expect(gz.status).toBe(200);
    expect(gz.headers.get('content-type')).toMatch(/^text\/javascript/);
    expect(gz.headers.get('content-encoding')).toBe('gzip');
    const body = await gz.text(); // fetch decompresses
    expect(body).toContain('@scalar/api-reference');
    expect(body.length).toBeGreaterThan(1_000_000);
  });
});
