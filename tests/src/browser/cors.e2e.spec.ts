/**
 * The browser example (examples/browser/index.html) in a real Chromium, served from an origin other than the
 * service's: with a minted token it creates a record, finds it by keyword and streams a RAG answer over SSE, reading
 * each answer's x-request-id (so the service exposes it). The same page on an origin CORS_ORIGINS does not list is
 * blocked by the browser, and nothing is written.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser } from 'playwright-core';
import { CHROMIUM_SKIP_REASON, launchChromium } from '../support/browser';
import { startService, type TestService } from '../support/service';
import { openExample, type OriginServer, startOrigin } from './example-page';

describe.skipIf(!!CHROMIUM_SKIP_REASON)(
  `a page on another origin calls the API with a minted ` +
    `token${CHROMIUM_SKIP_REASON ? ` (skipped: ${CHROMIUM_SKIP_REASON})` : ''}`,
  () => {
    let svc: TestService;
    let browser: Browser;
    let allowed: OriginServer;
    let stranger: OriginServer;
    let root: string;
    let token: string;
    const type = `note_${randomUUID().slice(0, 8)}`;
    const word = `fjord${randomUUID().slice(0, 6)}`;

    /** The records of the test's type, read by Node with the root key. */
    const records = async () => {
      const r = await svc.api.get(`/v1/records?typeName=${type}&limit=100`, root);
      expect(r.status, r.text).toBe(200);
      return r.body.data as Array<{ id: string; payload: Record<string, unknown> }>;
    };

    beforeAll(async () => {
      [allowed, stranger] = await Promise.all([startOrigin(), startOrigin()]);
      [svc, browser] = await Promise.all([startService({ env: { CORS_ORIGINS: allowed.origin } }), launchChromium()]);
      root = svc.bootstrap.tenants.test.rootKey;
      // What the app's back-end does: the schema once, then a narrow, short-lived token for the browser.
      const schema = await svc.api.post('/v1/schemas', root, {
        typeName: type,
        displayName: 'Note',
        allowedSurfaces: ['record'],
        fields: [
          { fieldId: 'title', fieldType: 'string', searchable: true },
          { fieldId: 'body', fieldType: 'string', searchable: true },
        ],
      });
      expect(schema.status, schema.text).toBe(201);
      const minted = await svc.api.post('/v1/tokens', root, {
        scope: { allowedActions: ['records:c', 'records:r', 'search:r', 'inference:r'] },
        expiresInSeconds: 3600,
      });
      expect(minted.status, minted.text).toBe(201);
      token = minted.body.token;
    }, 120_000);

    afterAll(async () => {
      await browser?.close();
      await svc?.stop();
      await allowed?.close();
      await stranger?.close();
    });

    it('creates a record, finds it by keyword, streams a RAG answer, reading x-request-id from each', async () => {
      const page = await openExample(browser, allowed.origin, { api: svc.url, token, type });
      const created = await page.create(
        `Night ferry ${word}`,
        `The night ferry to the ${word} islands leaves at 23:40 from pier 4.`,
      );
      expect(created.state, JSON.stringify(created.result)).toBe('done');
      // The page sent its own X-Request-Id (an allowed request header) and could read the echo (an exposed one).
      expect(created.result.requestId).toBe(created.result.sent);
      expect(created.result.indexStatus).toBe('PENDING_INDEX');
      const stored = (await records()).find((r) => r.id === created.result.id);
      expect(stored?.payload).toEqual({
        title: `Night ferry ${word}`,
        body: `The night ferry to the ${word} islands leaves at 23:40 from pier 4.`,
      });

      // Indexing is asynchronous: search until the keyword index has the record.
      let found: Awaited<ReturnType<typeof page.search>> | undefined;
      for (const deadline = Date.now() + 30_000; Date.now() < deadline;) {
        found = await page.search(word);
        expect(found.state, JSON.stringify(found.result)).toBe('done');
        if (found.result.ids.includes(created.result.id)) break;
        await new Promise((r) => setTimeout(r, 250));
      }
      expect(found!.result.ids).toContain(created.result.id);
      expect(found!.result.requestId).toBe(found!.result.sent);

      const answered = await page.ask(`When does the night ferry to the ${word} islands leave?`);
      expect(answered.state, JSON.stringify(answered.result)).toBe('done');
      expect(answered.result.events[0]).toBe('search_results');
      expect(answered.result.events.at(-1)).toBe('done');
      expect(answered.result.events).toContain('content_delta');
      expect(answered.result.answer).toContain('23:40');
      expect(answered.result.requestId).toBe(answered.result.sent);
      expect(page.consoleErrors).toEqual([]);
      await page.page.close();
    });

    it(
      'the same page on an origin not listed is blocked by the browser (fetch rejects), and nothing is ' + 'written',
      async () => {
        const before = (await records()).length;
        const page = await openExample(browser, stranger.origin, { api: svc.url, token, type });
        const created = await page.create(`Blocked ${word}`, 'This must never be stored.');
        expect(created.state).toBe('error');
        expect(created.result.error).toMatch(/TypeError: Failed to fetch/);
        expect(created.result.status).toBeUndefined();
        const searched = await page.search(word);
        expect(searched.state).toBe('error');
        expect(searched.result.error).toMatch(/TypeError: Failed to fetch/);
        // Chromium says why: the preflight named no allowed origin.
        expect(page.consoleErrors.join('\n')).toMatch(/blocked by CORS policy/);
        expect((await records()).length).toBe(before);
        await page.page.close();
      },
    );
  },
);
