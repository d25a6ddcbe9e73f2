import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { Page } from 'playwright-core';
import { CHROMIUM_SKIP_REASON } from '../support/browser';
import { describeViolations, startConsole, type ConsoleHarness } from '../support/console';

/**
 * The console's Records screen in Chromium: a person creates a record of a type, sees it indexed, edits it with
 * PATCH and PUT and reads every version back, filters the table by a lookup, meets a 409 when someone else changed
 * the record meanwhile, gets the API's refusal of a bad value next to its field with nothing stored, and deletes a
 * record to find its tombstone and history. What is on the page is checked, and the service through the API.
 */
// A page answers in well under a second on a quiet machine; the shared CI machine can be far slower.
vi.setConfig({ expect: { poll: { timeout: 15_000, interval: 100 } } });

describe.skipIf(!!CHROMIUM_SKIP_REASON)('the web console: records', () => {
  let h: ConsoleHarness;
  let key: string;
  beforeAll(async () => {
    h = await startConsole();
    key = h.svc.bootstrap.tenants.test.rootKey;
    const s = await h.svc.api.post('/v1/schemas', key, {
      typeName: 'task',
      displayName: 'Task',
      allowedSurfaces: ['record'],
      fields: [
        { fieldId: 'title', fieldType: 'string', required: true, searchable: true },
        { fieldId: 'priority', fieldType: 'number' },
        { fieldId: 'state', fieldType: 'enum', enumValues: ['open', 'closed'], filterable: true },
        { fieldId: 'done', fieldType: 'boolean' },
      ],
      lookupFields: ['state', { fieldName: 'priority', rangeEnabled: true }],
    });
    expect(s.status).toBe(201);
  });
  afterAll(async () => {
    await h?.stop();
  });

  const records = async () => {
    const r = await h.svc.api.get('/v1/records?type=task&includePayload=true&limit=100', key);
    expect(r.status).toBe(200);
    return r.body.data as Array<{ id: string; version: number; payload: Record<string, unknown> }>;
  };
  const openTasks = async (page: Page) => {
    await page.getByRole('navigation', { name: 'Screens' }).getByRole('link', { name: 'Records' }).click();
    await page.getByRole('link', { name: 'Task' }).click();
    await expect.poll(() => page.getByRole('heading', { name: 'Task records' }).count()).toBe(1);
  };
  const facts = (page: Page) => page.locator('dl.facts').innerText();

  it('creates a record, sees it indexed, edits it with PATCH and PUT, and reads every version', async () => {
    const p = await h.newPage();
    const { page } = p;
    await h.signIn(p);
    await openTasks(page);
    await page.getByRole('link', { name: 'New record' }).click();
    await page.getByLabel('External id (optional)').fill('task-1');
    await page.getByLabel('title').fill('Water the tomatoes');
    await page.getByLabel('priority (number)').fill('2');
    await page.getByLabel('state (enum)').selectOption('open');
    expect(await h.axe(page).then(describeViolations)).toEqual([]);
    await page.getByRole('button', { name: 'Create record' }).click();
    await expect.poll(() => page.getByRole('heading', { name: 'Record task-1' }).count(), { timeout: 15_000 }).toBe(1);
    expect(await page.getByLabel('Payload', { exact: true }).innerText()).toContain('"title": "Water the tomatoes"');
    expect(await facts(page)).toMatch(/Version\s+1/);
    // Indexing runs beside the API: the status moves to INDEXED (the person presses Refresh).
    await expect
      .poll(
        async () => {
          await page.getByRole('button', { name: 'Refresh' }).click();
          return facts(page);
        },
        { timeout: 30_000, interval: 500 },
      )
      .toMatch(/Index status\s+INDEXED/);
    expect(await h.axe(page).then(describeViolations)).toEqual([]);

    // PATCH: only the edited field changes.
    await page.getByRole('link', { name: 'Edit record' }).click();
    await expect.poll(() => page.getByRole('heading', { name: 'Edit record task-1' }).count()).toBe(1);
    await expect.poll(() => page.getByLabel('title').inputValue()).toBe('Water the tomatoes');
    await page.getByLabel('title').fill('Water the tomatoes at six');
    await page.getByRole('button', { name: 'Save record' }).click();
    await expect.poll(() => facts(page), { timeout: 15_000 }).toMatch(/Version\s+2/);
    const saved = await page.getByLabel('Payload', { exact: true }).innerText();
    expect(saved).toMatch(/"priority": 2/);
    expect(saved).toMatch(/"title": "Water the tomatoes at six"/);

    // PUT: the payload is replaced by the form's (the cleared priority is gone). The form is edited once it holds
    // version 2 (an edit made on an older version shown first is kept, and its save refused as a conflict).
    await page.getByRole('link', { name: 'Edit record' }).click();
    await expect.poll(() => page.getByRole('heading', { name: 'Edit record task-1' }).count()).toBe(1);
    await expect.poll(() => page.getByText('Editing version 2.').count()).toBe(1);
    await expect.poll(() => page.getByLabel('priority (number)').inputValue()).toBe('2');
    await page.getByLabel('priority (number)').fill('');
    await page.getByLabel('Save as').selectOption('PUT');
    await page.getByRole('button', { name: 'Save record' }).click();
    await expect.poll(() => facts(page), { timeout: 15_000 }).toMatch(/Version\s+3/);
    const [stored] = await records();
    expect(stored.version).toBe(3);
    expect(stored.payload).toEqual({ title: 'Water the tomatoes at six', state: 'open', done: false });

    // Every version, and any one's payload.
    const history = page.getByRole('table', { name: 'Version history' });
    await expect.poll(() => history.getByRole('row').count()).toBe(4);
    expect(await history.innerText()).toMatch(/1\s+RecordCreated[\s\S]*2\s+RecordUpdated[\s\S]*3\s+RecordUpdated/);
    await page.getByRole('button', { name: 'Show version 1' }).click();
    expect(await page.getByLabel('Payload of version 1').innerText()).toContain('"title": "Water the tomatoes"');
    expect(await h.axe(page).then(describeViolations)).toEqual([]);
    await h.screenshot(page, 'record');
    expect(p.elsewhere).toEqual([]);
    expect(p.problems).toEqual([]);
  });

  it(
    'browses the type as a table with its columns, filters it by a lookup in either order and searches it ' +
      'by a filterable field',
    async () => {
      for (const [title, priority, state] of [
        ['Sow the beans', 5, 'closed'],
        ['Mend the fence', 9, 'closed'],
        ['Feed the hens', 1, 'open'],
      ] as const)
        expect(
          (await h.svc.api.post('/v1/records', key, { typeName: 'task', payload: { title, priority, state } })).status,
        ).toBe(201);
      const p = await h.newPage();
      const { page } = p;
      await h.signIn(p);
      await openTasks(page);
      const table = page.getByRole('table', { name: /^Task records/ });
      await expect.poll(() => table.getByRole('row').count()).toBe(5);
      const head = await table.getByRole('row').first().innerText();
      expect(head).toMatch(/Record\s+title\s+priority\s+state\s+done\s+Index status\s+Version/);

      await page.getByLabel('Lookup field').selectOption('state');
      await page.getByLabel('Value').fill('closed');
      await page.getByRole('button', { name: 'Apply filter' }).click();
      await expect.poll(() => table.getByRole('row').count()).toBe(3);
      expect(await table.innerText()).not.toContain('Feed the hens');

      await page.getByLabel('Lookup field').selectOption('priority');
      await page.getByLabel('Match').selectOption('range');
      await page.getByLabel('From').fill('1');
      await page.getByLabel('To').fill('9');
      await page.getByLabel('Order').selectOption('desc');
      await page.getByRole('button', { name: 'Apply filter' }).click();
      await expect
        .poll(async () => (await table.getByRole('row').allInnerTexts()).slice(1).map((r) => r.split('\t')[1]))
        .toEqual(['Mend the fence', 'Sow the beans', 'Feed the hens']);
      expect(await h.axe(page).then(describeViolations)).toEqual([]);
      await h.screenshot(page, 'records');

      // Search the type's text, keeping the records whose filterable field has the value chosen (indexing runs beside
      // the API: the person searches again until the new records are found).
      await page.getByLabel('Search text').fill('beans fence hens tomatoes');
      await page.getByLabel('state is').selectOption('closed');
      await expect
        .poll(
          async () => {
            await page.getByRole('button', { name: 'Search', exact: true }).click();
            await page.waitForTimeout(300);
            return (await table.getByRole('row').allInnerTexts())
              .slice(1)
              .map((r) => r.split('\t')[1])
              .sort();
          },
          { timeout: 60_000, interval: 500 },
        )
        .toEqual(['Mend the fence', 'Sow the beans']);
      expect(await table.locator('caption').innerText()).toContain(
        'found for “beans fence hens tomatoes”, state = closed',
      );
      expect(await h.axe(page).then(describeViolations)).toEqual([]);
      await page.getByRole('button', { name: 'Clear search' }).click();

      // A bound the field cannot take: the API's refusal at the filter.
      await page.getByLabel('From').fill('high');
      await page.getByRole('button', { name: 'Apply filter' }).click();
      await expect
        .poll(() => page.getByRole('form', { name: 'Filter by a lookup' }).innerText())
        .toMatch(/VALIDATION_ERROR|must be|number/i);
      expect(p.elsewhere).toEqual([]);
      expect(p.problems).toEqual([]);
    },
  );

  it('shows a conflict when the record changed since the form was opened, and overwrites nothing', async () => {
    const created = await h.svc.api.post('/v1/records', key, {
      typeName: 'task',
      externalId: 'task-c',
      payload: { title: 'Prune the roses' },
    });
    const p = await h.newPage();
    const { page } = p;
    await h.signIn(p);
    await page.goto(`${h.url}#/records/task/${created.body.id}/edit`);
    await expect.poll(() => page.getByRole('heading', { name: 'Edit record task-c' }).count()).toBe(1);
    // Someone else changes it meanwhile.
    expect(
      (await h.svc.api.patch(`/v1/records/${created.body.id}`, key, { payload: { title: 'Prune the roses in March' } }))
        .status,
    ).toBe(200);
    await page.getByLabel('title').fill('Prune the roses today');
    await page.getByRole('button', { name: 'Save record' }).click();
    const alert = page.getByRole('alert').filter({ hasText: 'Conflict' });
    await expect.poll(() => alert.count()).toBe(1);
    expect(await alert.innerText()).toMatch(/changed since you opened it[\s\S]*409 VERSION_CONFLICT/);
    expect(await h.axe(page).then(describeViolations)).toEqual([]);
    await h.screenshot(page, 'record-conflict');
    const now = await h.svc.api.get(`/v1/records/${created.body.id}`, key);
    expect(now.body.payload.title).toBe('Prune the roses in March');
    expect(now.body.version).toBe(2);
    expect(p.problems).toEqual([]);
  });

  it("shows the API's refusal of a bad value next to its field, and stores nothing", async () => {
    const before = (await records()).length;
    const p = await h.newPage();
    const { page } = p;
    await h.signIn(p);
    await openTasks(page);
    await page.getByRole('link', { name: 'New record' }).click();
    await page.getByLabel('title').fill('Paint the shed');
    await page.getByLabel('priority (number)').fill('high');
    await page.getByRole('button', { name: 'Create record' }).click();
    const priority = page.getByLabel('priority (number)');
    await expect.poll(() => priority.getAttribute('aria-invalid')).toBe('true');
    const errorId = ((await priority.getAttribute('aria-describedby')) ?? '').split(' ').pop();
    expect(await page.locator(`[id="${errorId}"]`).innerText()).toBe('must be a number');
    expect(await page.getByLabel('title').getAttribute('aria-invalid')).toBeNull();
    expect(await h.axe(page).then(describeViolations)).toEqual([]);
    await h.screenshot(page, 'record-refused');
    expect(await records()).toHaveLength(before);
    expect(p.problems).toEqual([]);
  });

  it('deletes a record: its page then shows the tombstone and the whole history', async () => {
    const created = await h.svc.api.post('/v1/records', key, {
      typeName: 'task',
      externalId: 'task-d',
      payload: { title: 'Burn the leaves' },
    });
    const p = await h.newPage();
    const { page } = p;
    await h.signIn(p);
    await page.goto(`${h.url}#/records/task/${created.body.id}`);
    await expect.poll(() => page.getByRole('heading', { name: 'Record task-d' }).count(), { timeout: 15_000 }).toBe(1);
    await page.getByRole('button', { name: 'Delete record' }).click();
    await page.getByRole('button', { name: 'Delete version 1 for good' }).click();
    await expect.poll(() => page.getByRole('heading', { name: 'Deleted record' }).count(), { timeout: 15_000 }).toBe(1);
    expect(await page.getByRole('status').innerText()).toMatch(/deleted at .* \(its last version was 1\)/);
    await expect
      .poll(() => page.getByRole('table', { name: 'Version history' }).innerText())
      .toMatch(/2\s+RecordDeleted/);
    await page.getByRole('button', { name: 'Show version 1' }).click();
    expect(await page.getByLabel('Payload of version 1').innerText()).toContain('Burn the leaves');
    expect(await h.axe(page).then(describeViolations)).toEqual([]);
    await h.screenshot(page, 'record-deleted');
    expect((await h.svc.api.get(`/v1/records/${created.body.id}`, key)).status).toBe(404);
    expect(p.elsewhere).toEqual([]);
    expect(p.problems).toEqual([]);
  });

  it(
    'is live: a record written elsewhere appears in the open table, and an open record follows its new ' +
      'versions and its indexing, with no click',
    async () => {
      const p = await h.newPage();
      const { page } = p;
      await h.signIn(p);
      await openTasks(page);
      const table = page.getByRole('table', { name: /^Task records/ });
      await expect.poll(() => table.getByRole('row').count()).toBeGreaterThan(1);
      expect(await table.innerText()).not.toContain('Written elsewhere');
      const created = await h.svc.api.post('/v1/records', key, {
        typeName: 'task',
        externalId: 'task-live',
        payload: { title: 'Written elsewhere' },
      });
      expect(created.status).toBe(201);
      await expect.poll(() => table.innerText()).toContain('Written elsewhere');

      await page.goto(`${h.url}#/records/task/${created.body.id}`);
      await expect
        .poll(() => page.getByRole('heading', { name: 'Record task-live' }).count(), { timeout: 15_000 })
        .toBe(1);
      // Indexing and a new version made through the API show up on the open page by themselves.
      await expect.poll(() => facts(page), { timeout: 30_000 }).toMatch(/Index status\s+INDEXED/);
      const patched = await h.svc.api.patch(`/v1/records/${created.body.id}`, key, {
        expectedVersion: 1,
        payload: { title: 'Changed elsewhere' },
      });
      expect(patched.status).toBe(200);
      await expect.poll(() => facts(page)).toMatch(/Version\s+2/);
      expect(await page.getByLabel('Payload', { exact: true }).innerText()).toContain('"title": "Changed elsewhere"');
      await expect
        .poll(() => page.getByRole('table', { name: 'Version history' }).innerText())
        .toMatch(/2\s+RecordUpdated/);
      expect(p.elsewhere).toEqual([]);
      expect(p.problems).toEqual([]);
    },
  );
});
