import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { CHROMIUM_SKIP_REASON } from '../support/browser';
import { describeViolations, startConsole, type ConsoleHarness } from '../support/console';

/**
 * The console's Schemas screen in Chromium: a person creates a schema with fields of several types, a lookup and an
 * index mode, reads it back, edits it (a new version), and sees the API's refusal of bad input next to the field it
 * names, with nothing stored (checked through the API).
 */
// A page answers in well under a second on a quiet machine; the shared CI machine can be far slower.
vi.setConfig({ expect: { poll: { timeout: 15_000, interval: 100 } } });

describe.skipIf(!!CHROMIUM_SKIP_REASON)('the web console: schemas', () => {
  let h: ConsoleHarness;
  beforeAll(async () => {
    h = await startConsole();
  });
  afterAll(async () => {
    await h?.stop();
  });

  const schemaNames = async () => {
    const r = await h.svc.api.get('/v1/schemas?limit=100', h.svc.bootstrap.tenants.test.rootKey);
    expect(r.status).toBe(200);
    return (r.body.data as Array<{ typeName: string }>).map((s) => s.typeName);
  };

  it('creates a schema from the form, reads it back, and edits it into version 2', async () => {
    const p = await h.newPage();
    const { page } = p;
    await h.signIn(p);
    await expect.poll(() => page.getByRole('heading', { name: 'Schemas', level: 1 }).count()).toBe(1);
    await page.getByRole('link', { name: 'New schema' }).click();
    await page.getByLabel('Type name').fill('book');
    await page.getByLabel('Display name').fill('Book');
    await page.getByLabel('Index mode').selectOption('TEXT');
    await page.getByLabel('Field 1 id').fill('title');
    await page.getByRole('group', { name: 'Field 1' }).getByLabel('required').check();
    await page.getByRole('group', { name: 'Field 1' }).getByLabel('searchable').check();
    await page.getByRole('button', { name: 'Add a field' }).click();
    await page.getByLabel('Field 2 id').fill('genre');
    await page.getByLabel('Field 2 type').selectOption('enum');
    await page.getByLabel('Field 2 values').fill('novel, poetry, essay');
    await page.getByRole('group', { name: 'Field 2' }).getByLabel('filterable').check();
    await page.getByRole('button', { name: 'Add a field' }).click();
    await page.getByLabel('Field 3 id').fill('isbn');
    await page.getByRole('button', { name: 'Add a lookup' }).click();
    await page.getByLabel('Lookup 1 field').fill('isbn');
    await page.getByRole('group', { name: 'Lookup 1' }).getByLabel('unique').check();
    expect(await h.axe(page).then(describeViolations)).toEqual([]);
    await h.screenshot(page, 'schema-form');
    await page.getByRole('button', { name: 'Create schema' }).click();

    // The schema as read back from the service.
    await expect.poll(() => page.getByRole('heading', { name: 'Schema book' }).count(), { timeout: 15_000 }).toBe(1);
    const facts = await page.locator('dl.facts').innerText();
    expect(facts).toMatch(/Index mode\s+TEXT/);
    expect(facts).toMatch(/Lookups\s+isbn \(unique\)/);
    const fields = page.getByRole('table', { name: 'Fields' });
    expect(await fields.getByRole('row').count()).toBe(4);
    expect(await fields.getByRole('row').nth(2).innerText()).toMatch(
      /genre\s+enum\s+filterable\s+novel, poetry, essay/,
    );
    expect(await page.getByRole('list').filter({ hasText: 'Version 1' }).innerText()).toContain('SchemaCreated');
    expect(await h.axe(page).then(describeViolations)).toEqual([]);
    await h.screenshot(page, 'schema');

    await page.getByRole('link', { name: 'Edit schema' }).click();
    await expect.poll(() => page.getByRole('heading', { name: 'Edit schema book' }).count()).toBe(1);
    await page.getByRole('button', { name: 'Add a field' }).click();
    await page.getByLabel('Field 4 id').fill('published');
    await page.getByLabel('Field 4 type').selectOption('date');
    await page.getByRole('button', { name: 'Save schema' }).click();
    await expect.poll(() => page.getByRole('heading', { name: 'Schema book' }).count(), { timeout: 15_000 }).toBe(1);
    await expect.poll(() => page.getByRole('table', { name: 'Fields' }).innerText()).toMatch(/published\s+date/);
    expect(await page.locator('dl.facts').innerText()).toMatch(/Version\s+2/);

    // The list shows it.
    await page.getByRole('navigation', { name: 'Screens' }).getByRole('link', { name: 'Schemas' }).click();
    const table = page.getByRole('table', { name: 'Schemas of this context' });
    await expect.poll(() => table.innerText()).toMatch(/book\s+Book\s+4\s+record\s+TEXT\s+2/);
    expect(await h.axe(page).then(describeViolations)).toEqual([]);
    await h.screenshot(page, 'schemas');
    expect(p.elsewhere).toEqual([]);
    expect(p.problems).toEqual([]);
  });

  it("shows the API's refusal next to the field it names, and nothing is stored", async () => {
    const p = await h.newPage();
    const { page } = p;
    await h.signIn(p);
    await page.getByRole('link', { name: 'New schema' }).click();
    await page.getByLabel('Type name').fill('bad name!');
    await page.getByLabel('Display name').fill('Bad');
    await page.getByLabel('Field 1 id').fill('title');
    await page.getByRole('button', { name: 'Create schema' }).click();
    const typeName = page.getByLabel('Type name');
    await expect.poll(() => typeName.getAttribute('aria-invalid')).toBe('true');
    const errorId = ((await typeName.getAttribute('aria-describedby')) ?? '').split(' ').pop();
    expect(await page.locator(`[id="${errorId}"]`).innerText()).toMatch(/must match/);
    expect(await h.axe(page).then(describeViolations)).toEqual([]);
    await h.screenshot(page, 'schema-refused');

    // A lookup of a field the schema does not declare: refused at the lookups.
    await typeName.fill('magazine');
    await page.getByRole('button', { name: 'Add a lookup' }).click();
    await page.getByLabel('Lookup 1 field').fill('issn');
    await page.getByRole('button', { name: 'Create schema' }).click();
    await expect
      .poll(() => page.getByRole('group', { name: 'Lookups' }).innerText())
      .toMatch(/'issn' is not a declared field/);
    expect(await typeName.getAttribute('aria-invalid')).toBeNull();
    // Still on the form, and the service has neither.
    expect(await page.getByRole('heading', { name: 'New schema' }).count()).toBe(1);
    const names = await schemaNames();
    expect(names).not.toContain('bad name!');
    expect(names).not.toContain('magazine');
    expect(p.elsewhere).toEqual([]);
    expect(p.problems).toEqual([]);
  });
});
