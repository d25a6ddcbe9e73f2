import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CHROMIUM_SKIP_REASON } from '../support/browser';
import { eventually } from '../support/service';
import { describeViolations, ingestIndexed, startConsole, type ConsoleHarness } from '../support/console';

/**
 * The console's search playground in Chromium: one query in TEXT, SEMANTIC and HYBRID side by side, each with its
 * results, scores, highlighted words and the time it took; narrowing to a record type; filters that are not JSON and
 * the API's refusal of a bad limit at its field; and live results that follow a new document through the change stream.
 */
describe.skipIf(!!CHROMIUM_SKIP_REASON)('the web console: search playground', () => {
  let h: ConsoleHarness;
  let key: string;
  const ingest = (title: string, text: string) => ingestIndexed(h.svc, key, title, text);
  beforeAll(async () => {
    h = await startConsole();
    key = h.svc.bootstrap.tenants.test.rootKey;
    await ingest(
      'Notes on penguins',
      'Emperor penguins incubate their eggs on their feet through the Antarctic winter.',
    );
    await ingest(
      'Notes on copper',
      'Copper conducts electricity well because its outer electron moves freely through the metal lattice.',
    );
    await ingest('Notes on volcanoes', 'Mount Etna on Sicily is one of the most active volcanoes in Europe.');
    // A record type with a searchable field: the type narrowing keeps to it.
    expect(
      (
        await h.svc.api.post('/v1/schemas', key, {
          typeName: 'sighting',
          displayName: 'Sighting',
          allowedSurfaces: ['record'],
          indexMode: 'TEXT',
          fields: [{ fieldId: 'note', fieldType: 'string', searchable: true }],
        })
      ).status,
    ).toBe(201);
    const rec = await h.svc.api.post('/v1/records', key, {
      typeName: 'sighting',
      payload: { note: 'Two penguins guarding eggs near the station.' },
    });
    expect(rec.status, rec.text).toBe(201);
    await eventually(
      async () =>
        (await h.svc.api.get(`/v1/records/${rec.body.id}`, key)).body.indexStatus === 'INDEXED' ? true : null,
      60_000,
      100,
    );
  }, 240_000);
  afterAll(async () => {
    await h?.stop();
  });

  it('compares the three modes for a query: results with scores, highlighted snippets and each latency', async () => {
    const p = await h.newPage();
    const { page } = p;
    await h.signIn(p);
    await page.getByRole('navigation', { name: 'Screens' }).getByRole('link', { name: 'Search playground' }).click();
    await expect.poll(() => page.getByRole('heading', { name: 'Search playground', level: 1 }).count()).toBe(1);
    await page.getByLabel('Query').fill('penguins eggs');
    await page.getByRole('button', { name: 'Search' }).click();
    for (const mode of ['TEXT', 'SEMANTIC', 'HYBRID']) {
      const column = page.getByRole('region', { name: mode });
      await expect
        .poll(() => column.getByRole('list', { name: `${mode} results` }).count(), { timeout: 20_000 })
        .toBe(1);
      const penguins = column.getByRole('listitem').filter({ hasText: 'Notes on penguins' });
      await expect.poll(() => penguins.count()).toBe(1);
      expect(await penguins.innerText()).toMatch(/score \d\.\d{4} · text \d\.\d{4} · semantic \d\.\d{4}/);
      expect(await column.locator('.latency').innerText()).toMatch(
        /\d+ results? · [\d.]+ ms in the service · \d+ ms round trip/,
      );
    }
    // The keyword modes mark the query's words in the snippet (as <mark> elements, not markup text).
    const marked = await page.getByRole('region', { name: 'TEXT' }).locator('mark').allInnerTexts();
    expect(marked.map((m) => m.toLowerCase())).toEqual(expect.arrayContaining(['penguins', 'eggs']));
    expect(await page.getByRole('region', { name: 'TEXT' }).innerText()).not.toContain('<mark>');
    // The semantic leg ranks by meaning: the unrelated documents come too, lower.
    expect(await page.getByRole('region', { name: 'SEMANTIC' }).getByRole('listitem').count()).toBeGreaterThan(1);
    expect(await h.axe(page).then(describeViolations)).toEqual([]);
    await h.screenshot(page, 'search');

    // Narrowed to the record type: only its records, in every mode.
    await page.getByLabel('Type name').fill('sighting');
    await page.getByRole('button', { name: 'Search' }).click();
    // Each column shows its previous answer (documents among its results) until its own request returns; HYBRID,
    // waiting on the model, can come seconds after TEXT under load. Each column is awaited on its own.
    for (const mode of ['TEXT', 'HYBRID']) {
      const items = () => page.getByRole('region', { name: mode }).getByRole('listitem').allInnerTexts();
      const notNarrowed = async () => {
        const xs = await items();
        return xs.length ? xs.filter((i) => !/^sighting \S+ record/.test(i)) : ['(no results shown)'];
      };
      await expect.poll(notNarrowed, { timeout: 20_000 }).toEqual([]);
    }
    expect(p.elsewhere).toEqual([]);
    expect(p.problems).toEqual([]);
  });

  it("shows the API's refusal of a bad limit at its field, and a live search follows a new document", async () => {
    const p = await h.newPage();
    const { page } = p;
    await h.signIn(p);
    await page.getByRole('navigation', { name: 'Screens' }).getByRole('link', { name: 'Search playground' }).click();
    await page.getByLabel('Query').fill('glaciers');
    await page.getByLabel('Results per mode').fill('5000');
    await page.getByRole('button', { name: 'Search' }).click();
    const limit = page.getByLabel('Results per mode');
    await expect.poll(() => limit.getAttribute('aria-invalid'), { timeout: 15_000 }).toBe('true');
    const errorId = ((await limit.getAttribute('aria-describedby')) ?? '').split(' ').pop();
    expect(await page.locator(`[id="${errorId}"]`).innerText()).toMatch(/<=100/);
    expect(await page.locator('.modes').count()).toBe(0);
    expect(await h.axe(page).then(describeViolations)).toEqual([]);
    // Filters that are not JSON: said at the field, and nothing is sent.
    await page.getByLabel('Filters (JSON)').fill('{genre: novel');
    await page.getByRole('button', { name: 'Search' }).click();
    const filters = page.getByLabel('Filters (JSON)');
    await expect.poll(() => filters.getAttribute('aria-invalid')).toBe('true');
    expect(await page.getByRole('alert').filter({ hasText: 'not JSON' }).count()).toBe(1);
    await filters.fill('');

    await limit.fill('10');
    await page.getByLabel('Live: search again when records or documents change').check();
    await page.getByRole('button', { name: 'Search' }).click();
    const text = page.getByRole('region', { name: 'TEXT' });
    await expect.poll(() => text.innerText(), { timeout: 20_000 }).toMatch(/0 results · /);
    // Someone else adds a document: the results follow without a click.
    await h.svc.api.post('/v1/documents', key, {
      title: 'Notes on glaciers',
      text: 'Glaciers carve valleys as they flow downhill under their own weight.',
      indexMode: 'HYBRID',
    });
    await expect.poll(() => text.innerText(), { timeout: 60_000 }).toMatch(/Notes on glaciers/);
    expect(await page.getByRole('status').filter({ hasText: 'changes seen' }).innerText()).toMatch(/document\./);
    expect(p.elsewhere).toEqual([]);
    expect(p.problems).toEqual([]);
  });
});
