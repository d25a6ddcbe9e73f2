import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { CHROMIUM_SKIP_REASON } from '../support/browser';
import { describeViolations, startConsole, type ConsoleHarness } from '../support/console';

/**
 * The web console's shell in Chromium: served at /console with a policy of the service's own origin only, nothing
 * fetched elsewhere; signing in with a key (kept in the tab's sessionStorage only), a refused credential shown at its
 * field with nothing kept, the developer token recognised, signing out.
 */
// A page answers in well under a second on a quiet machine; the shared CI machine can be far slower.
vi.setConfig({ expect: { poll: { timeout: 15_000, interval: 100 } } });

describe.skipIf(!!CHROMIUM_SKIP_REASON)('the web console: serving and sign-in', () => {
  let h: ConsoleHarness;
  beforeAll(async () => {
    h = await startConsole();
  });
  afterAll(async () => {
    await h?.stop();
  });

  it('is served at /console, its own origin only, its scripts compressed and cached by their hash', async () => {
    const page = await fetch(h.url, { headers: { 'accept-encoding': 'gzip' } });
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
    const csp = page.headers.get('content-security-policy') ?? '';
    expect(csp).toContain("default-src 'self'");
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("connect-src 'self'");
    expect(csp).not.toMatch(/unsafe-inline|unsafe-eval|https?:/);
    const html = await page.text();
    const script = /<script type="module" src="(console\/app-[A-Z0-9]+\.js)"/.exec(html)?.[1];
    expect(script, html).toBeDefined();
    const js = await fetch(`${h.svc.url}/${script}`, { headers: { 'accept-encoding': 'gzip' } });
    expect(js.status).toBe(200);
    expect(js.headers.get('content-encoding')).toBe('gzip');
    expect(js.headers.get('cache-control')).toContain('immutable');
    expect((await fetch(`${h.svc.url}/console/nothing-here.js`)).status).toBe(404);
    // The address with a trailing slash leads to the page.
    const slash = await fetch(`${h.url}/`, { redirect: 'manual' });
    expect(slash.status).toBe(308);
    expect(new URL(slash.headers.get('location')!, `${h.url}/`).pathname).toBe('/console');
  });

  it(
    'refuses an unknown key next to its field and keeps nothing; a key signs in for this tab only; signing ' +
      'out forgets it',
    async () => {
      const p = await h.newPage();
      const { page } = p;
      await page.goto(h.url);
      await expect.poll(() => page.getByRole('heading', { name: 'Sign in to the console' }).count()).toBe(1);
      expect(await h.axe(page).then(describeViolations)).toEqual([]);
      await h.screenshot(page, 'sign-in');

      await page.getByLabel('Key or token').fill('sk_test_not-a-key-of-anyone');
      await page.getByRole('button', { name: 'Sign in' }).click();
      // The API's refusal, under the field it is about, tied to it for assistive technology.
      const field = page.getByLabel('Key or token');
      await expect.poll(() => field.getAttribute('aria-invalid')).toBe('true');
      const describedBy = (await field.getAttribute('aria-describedby')) ?? '';
      const message = await page.locator(`[id="${describedBy.split(' ').pop()}"]`).innerText();
      expect(message).toMatch(/unauthori[sz]ed|credential/i);
      expect(
        await page.evaluate(
          'JSON.stringify([Object.keys(sessionStorage), Object.keys(localStorage), document.cookie])',
        ),
      ).toBe('[[],[],""]');
      expect(await h.axe(page).then(describeViolations)).toEqual([]);
      await h.screenshot(page, 'sign-in-refused');

      const key = h.svc.bootstrap.tenants.test;
      await field.fill(key.rootKey);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await expect.poll(() => page.getByRole('navigation', { name: 'Screens' }).count()).toBe(1);
      // Who is signed in: the tenant and the context the key acts in, as GET /v1/ping answered.
      await expect.poll(() => page.getByRole('banner').innerText()).toContain(key.tenantId);
      expect(await page.getByRole('banner').innerText()).toContain(key.contextId);
      // The key is in this tab's sessionStorage, nowhere else.
      const stored = (await page.evaluate(
        'JSON.stringify([Object.values(sessionStorage).join(""), Object.keys(localStorage), document.cookie])',
      )) as string;
      const [session, local, cookie] = JSON.parse(stored) as [string, string[], string];
      expect(session).toContain(key.rootKey);
      expect(local).toEqual([]);
      expect(cookie).toBe('');
      // A reload keeps the tab signed in; another tab (its own session) is not.
      await page.reload();
      await expect.poll(() => page.getByRole('navigation', { name: 'Screens' }).count()).toBe(1);
      const other = await h.newPage();
      await other.page.goto(h.url);
      await expect.poll(() => other.page.getByRole('heading', { name: 'Sign in to the console' }).count()).toBe(1);

      await page.getByRole('button', { name: 'Sign out' }).click();
      await expect.poll(() => page.getByRole('heading', { name: 'Sign in to the console' }).count()).toBe(1);
      expect(await page.evaluate('sessionStorage.length')).toBe(0);
      expect(p.elsewhere).toEqual([]);
      expect(p.problems).toEqual([]);
    },
  );

  it('is usable from the keyboard alone: sign in, skip to the content, open a screen', async () => {
    const p = await h.newPage();
    const { page } = p;
    await page.goto(h.url);
    await page.getByRole('heading', { name: 'Sign in to the console' }).waitFor();
    const focused = () =>
      page.evaluate(
        '(() => { const e = document.activeElement; return e ? `${e.tagName} ${e.getAttribute("name") ?? ' +
          '""} ${(e.textContent ?? "").trim()}` : "" })()',
      ) as Promise<string>;
    await page.keyboard.press('Tab');
    expect(await focused()).toBe('INPUT token ');
    await page.keyboard.type(h.svc.bootstrap.tenants.test.rootKey);
    await page.keyboard.press('Enter');
    // Signed in: focus lands on the screen's heading.
    await expect.poll(focused).toBe('H1  Schemas');
    // From the top of the page the first stop is the skip link, which leads into the content.
    await page.reload();
    await page.getByRole('heading', { name: 'Schemas' }).waitFor();
    await page.keyboard.press('Tab');
    expect(await focused()).toBe('A  Skip to the content');
    await page.keyboard.press('Enter');
    await page.keyboard.press('Tab');
    expect(await focused()).toBe('A  New schema');
    await page.keyboard.press('Enter');
    await expect.poll(focused).toBe('H1  New schema');
    await page.keyboard.press('Tab');
    expect(await focused()).toBe('INPUT typeName ');
    expect(p.problems).toEqual([]);
  });

  it('takes the developer token for the developer pages (it cannot use the tenant API)', async () => {
    const p = await h.newPage();
    await h.signIn(p, h.svc.bootstrap.developerToken);
    await expect.poll(() => p.page.getByRole('banner').innerText()).toContain('Developer token');
    // None of the tenant screens is offered to it.
    expect(
      await p.page.getByRole('navigation', { name: 'Screens' }).getByRole('link', { name: 'Schemas' }).count(),
    ).toBe(0);
    expect(p.elsewhere).toEqual([]);
    expect(p.problems).toEqual([]);
  });
});
