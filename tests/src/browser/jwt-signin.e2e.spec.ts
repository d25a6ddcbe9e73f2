/**
 * The browser example (examples/browser/index.html) in a real Chromium, served from another origin, signed in with
 * a token of the app's own identity provider instead of a minted one: a local OpenID Connect issuer
 * (support/oidc-issuer.ts) registered for the tenant, its JWT handed to the page as the bearer token. It creates a
 * record, finds it by keyword and streams a RAG answer over SSE; a refused JWT (expired past the skew) reaches the
 * page as a readable 401 and writes nothing.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser } from 'playwright-core';
import { CHROMIUM_SKIP_REASON, launchChromium } from '../support/browser';
import { LocalIssuer } from '../support/oidc-issuer';
import { OPERATOR_TOKEN, startService, type TestService } from '../support/service';
import { openExample, type OriginServer, startOrigin } from './example-page';

describe.skipIf(!!CHROMIUM_SKIP_REASON)(
  `a page on another origin calls the API with a JWT of the app's identity ` +
    `provider${CHROMIUM_SKIP_REASON ? ` (skipped: ${CHROMIUM_SKIP_REASON})` : ''}`,
  () => {
    let svc: TestService;
    let browser: Browser;
    let origin: OriginServer;
    let idp: LocalIssuer;
    let kid: string;
    let root: string;
    const audience = 'browser-example';
    const type = `note_${randomUUID().slice(0, 8)}`;
    const word = `glacier${randomUUID().slice(0, 6)}`;
    const now = () => Math.floor(Date.now() / 1000);
    /** What the identity provider issues to a signed-in user of the app. */
    const userToken = (claims: Record<string, unknown> = {}) =>
      idp.sign(kid, {
        aud: audience,
        sub: 'browser-user',
        svc_permissions: ['records:c', 'records:r', 'search:r', 'inference:r'],
        ...claims,
      });

    const records = async () => {
      const r = await svc.api.get(`/v1/records?typeName=${type}&limit=100`, root);
      expect(r.status, r.text).toBe(200);
      return r.body.data as Array<{ id: string; userId: string | null; payload: Record<string, unknown> }>;
    };

    beforeAll(async () => {
      [origin, idp] = await Promise.all([startOrigin(), LocalIssuer.start()]);
      kid = await idp.addKey('ES256');
      [svc, browser] = await Promise.all([startService({ env: { CORS_ORIGINS: origin.origin } }), launchChromium()]);
      root = svc.bootstrap.tenants.test.rootKey;
      const registered = await svc.api.call(
        'PUT',
        `/operator/tenants/${svc.bootstrap.tenants.test.tenantId}/jwt-issuers`,
        { token: OPERATOR_TOKEN, body: { issuers: [{ issuer: idp.url, audience }] } },
      );
      expect(registered.status, registered.text).toBe(200);
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
    }, 120_000);

    afterAll(async () => {
      await browser?.close();
      await svc?.stop();
      await origin?.close();
      await idp?.close();
    });

    it('creates a record (stamped with the signed-in user), finds it by keyword and streams a RAG answer', async () => {
      const page = await openExample(browser, origin.origin, { api: svc.url, token: await userToken(), type });
      const created = await page.create(
        `Glacier walk ${word}`,
        `The guided walk on the ${word} glacier starts at 09:15 from the upper hut.`,
      );
      expect(created.state, JSON.stringify(created.result)).toBe('done');
      expect(created.result.requestId).toBe(created.result.sent);
      const stored = (await records()).find((r) => r.id === created.result.id);
      expect(stored?.userId).toBe('browser-user');

      let found: Awaited<ReturnType<typeof page.search>> | undefined;
      for (const deadline = Date.now() + 30_000; Date.now() < deadline;) {
        found = await page.search(word);
        expect(found.state, JSON.stringify(found.result)).toBe('done');
        if (found.result.ids.includes(created.result.id)) break;
        await new Promise((r) => setTimeout(r, 250));
      }
      expect(found!.result.ids).toContain(created.result.id);

      const answered = await page.ask(`When does the guided walk on the ${word} glacier start?`);
      expect(answered.state, JSON.stringify(answered.result)).toBe('done');
      expect(answered.result.events[0]).toBe('search_results');
      expect(answered.result.events.at(-1)).toBe('done');
      expect(answered.result.answer).toContain('09:15');
      expect(page.consoleErrors).toEqual([]);
      await page.page.close();
    });

    it('a JWT expired past the skew is a 401 the page can read, and nothing is written', async () => {
      const before = (await records()).length;
      const page = await openExample(browser, origin.origin, {
        api: svc.url,
        token: await userToken({ iat: now() - 900, exp: now() - 120 }),
        type,
      });
      const created = await page.create(`Expired ${word}`, 'This must never be stored.');
      expect(created.state).toBe('error');
      expect(created.result.status).toBe(401);
      expect(created.result.errorCode).toBe('UNAUTHORIZED');
      expect((await records()).length).toBe(before);
      await page.page.close();
    });
  },
);
