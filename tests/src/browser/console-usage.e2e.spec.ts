import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CHROMIUM_SKIP_REASON } from '../support/browser';
import { describeViolations, startConsole, type ConsoleHarness } from '../support/console';

/**
 * The console's Usage and activity screen in Chromium: after some traffic (writes and searches), the month's usage is
 * drawn as SVG bar charts whose bars carry the report's figures, the rate-limit headroom is shown from the last counted
 * answer's headers, and the activity log lists the requests, narrowed by its filters.
 */
describe.skipIf(!!CHROMIUM_SKIP_REASON)('the web console: usage and activity', () => {
  let h: ConsoleHarness;
  let key: string;
  beforeAll(async () => {
    h = await startConsole();
    key = h.svc.bootstrap.tenants.test.rootKey;
    const s = await h.svc.api.post('/v1/schemas', key, {
      typeName: 'note',
      displayName: 'Note',
      allowedSurfaces: ['record'],
      indexMode: 'TEXT',
      fields: [{ fieldId: 'body', fieldType: 'string', searchable: true }],
    });
    expect(s.status, s.text).toBe(201);
    for (let i = 0; i < 3; i++)
      expect(
        (await h.svc.api.post('/v1/records', key, { typeName: 'note', payload: { body: `note number ${i}` } })).status,
      ).toBe(201);
    for (const mode of ['TEXT', 'TEXT', 'HYBRID'])
      expect((await h.svc.api.post('/v1/search', key, { query: 'note', mode })).status).toBe(200);
    expect((await h.svc.api.post('/v1/search', key, { query: 'note', limit: 500 })).status).toBe(400);
  }, 180_000);
  afterAll(async () => {
    await h?.stop();
  });

  it(
    'draws the usage as bar charts, shows the rate-limit headroom of the last counted answer, and lists the ' +
      'activity with filters',
    async () => {
      const p = await h.newPage();
      const { page } = p;
      await h.signIn(p);
      // A search from this tab: its answers carry the rate-limit headers the headroom is read from.
      await page.getByRole('navigation', { name: 'Screens' }).getByRole('link', { name: 'Search playground' }).click();
      await page.getByLabel('Query').fill('note');
      await page.getByRole('button', { name: 'Search' }).click();
      await expect.poll(() => page.locator('.mode').count(), { timeout: 20_000 }).toBe(3);
      await page.getByRole('navigation', { name: 'Screens' }).getByRole('link', { name: 'Usage and activity' }).click();
      await expect.poll(() => page.getByRole('heading', { name: 'Usage and activity', level: 1 }).count()).toBe(1);

      // The searches chart: one bar per mode, as long as the report's counts (TEXT 2 + 1, SEMANTIC 1, HYBRID 1 + 1).
      const searches = page.getByRole('figure', { name: 'Searches' });
      await expect.poll(() => searches.locator('svg rect.bar').count(), { timeout: 15_000 }).toBe(3);
      const readBars = () =>
        searches
          .locator('svg rect.bar')
          .evaluateAll((rs) =>
            rs.map((r) => ({ value: Number(r.getAttribute('data-value')), width: Number(r.getAttribute('width')) })),
          );
      // Usage is tallied beside the requests: this tab's own searches may need a refresh to be counted (a person
      // presses it).
      await expect
        .poll(
          async () => {
            const values = (await readBars()).map((b) => b.value);
            if (values.join() !== '3,1,2') await page.getByRole('button', { name: 'Refresh usage' }).click();
            return values;
          },
          { timeout: 20_000, interval: 500 },
        )
        .toEqual([3, 1, 2]);
      const bars = await readBars();
      expect(bars[0].width).toBeGreaterThan(bars[2].width);
      expect(bars[2].width).toBeGreaterThan(bars[1].width);
      expect(bars[1].width).toBeGreaterThan(0);
      expect(await searches.locator('svg').getAttribute('aria-label')).toBe('Searches: TEXT 3, SEMANTIC 1, HYBRID 2');
      const writes = page.getByRole('figure', { name: 'Writes' });
      expect(await writes.locator('svg').getAttribute('aria-label')).toMatch(/Record writes 3/);
      expect(await page.getByRole('figure', { name: 'Credits per month' }).locator('svg rect.bar').count()).toBe(6);

      // The headroom, from the X-RateLimit headers of this tab's last counted answer (a search).
      const headroom = await page.locator('.headroom').innerText();
      expect(headroom).toMatch(/as the answer to POST \/v1\/search at/);
      const [, left, limit] = /headroom: (\d+) of (\d+) requests/.exec(headroom) ?? [];
      expect(Number(limit)).toBeGreaterThan(0);
      expect(Number(left)).toBeLessThan(Number(limit));
      expect(Number(await page.locator('meter').getAttribute('value'))).toBe(Number(left));

      // The activity log: the searches are there, the refused one too; filtered to errors of search only.
      const log = page.getByRole('table', { name: /Requests, newest first/ });
      await expect.poll(() => log.innerText(), { timeout: 15_000 }).toMatch(/POST\s+\/v1\/search\s+search\s+200/);
      await page.getByLabel('Resource').selectOption('search');
      await page.getByLabel('Errors only').check();
      await page.getByRole('button', { name: 'Apply filters' }).click();
      await expect.poll(() => log.getByRole('row').count(), { timeout: 15_000 }).toBe(2);
      expect(await log.getByRole('row').nth(1).innerText()).toMatch(
        /POST\s+\/v1\/search\s+search\s+400\s+VALIDATION_ERROR/,
      );
      expect(await h.axe(page).then(describeViolations)).toEqual([]);
      await h.screenshot(page, 'usage');
      expect(p.elsewhere).toEqual([]);
      expect(p.problems).toEqual([]);
    },
  );
});
