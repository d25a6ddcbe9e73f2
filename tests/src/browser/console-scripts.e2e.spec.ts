import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CHROMIUM_SKIP_REASON } from '../support/browser';
import { describeViolations, startConsole, type ConsoleHarness } from '../support/console';

/**
 * The console's Scripts and triggers screen in Chromium: a person writes a script, runs it with input and sees the
 * result; pushes a version that throws and sees the script's error; a syntax error is refused at the source with
 * nothing stored; declares a trigger rule running the throwing script and, after a record is written, sees the rule's
 * failure listed.
 */
describe.skipIf(!!CHROMIUM_SKIP_REASON)('the web console: scripts and triggers', () => {
  let h: ConsoleHarness;
  let key: string;
  beforeAll(async () => {
    h = await startConsole();
    key = h.svc.bootstrap.tenants.test.rootKey;
    const s = await h.svc.api.post('/v1/schemas', key, {
      typeName: 'order',
      displayName: 'Order',
      allowedSurfaces: ['record'],
      capabilities: { triggersEnabled: true },
      fields: [{ fieldId: 'item', fieldType: 'string', filterable: true }],
    });
    expect(s.status, s.text).toBe(201);
  }, 180_000);
  afterAll(async () => {
    await h?.stop();
  });

  it(
    'writes a script, runs it with input, sees its result, then an error; a syntax error is refused at the ' + 'source',
    async () => {
      const p = await h.newPage();
      const { page } = p;
      await h.signIn(p);
      await page
        .getByRole('navigation', { name: 'Screens' })
        .getByRole('link', { name: 'Scripts and triggers' })
        .click();
      await expect.poll(() => page.getByRole('heading', { name: 'Scripts', level: 1 }).count()).toBe(1);
      await page.getByLabel('Script name').fill('greet');
      await page
        .getByRole('textbox', { name: 'Source' })
        .fill('export default (input) => ({ hello: input.params.name, n: input.params.n * 2 });\n');
      await page.getByRole('button', { name: 'Create script' }).click();
      await expect.poll(() => page.getByRole('heading', { name: 'Script greet' }).count(), { timeout: 15_000 }).toBe(1);
      await expect.poll(() => page.locator('dl.facts').innerText()).toMatch(/Version\s+1 \(latest\)/);

      await page.getByLabel('Input (JSON)').fill('{"name": "Ada", "n": 21}');
      await page.getByRole('button', { name: 'Run script' }).click();
      const result = page.getByRole('region', { name: 'Result' });
      await expect.poll(() => result.count(), { timeout: 15_000 }).toBe(1);
      expect(JSON.parse(await result.getByLabel('Result').innerText())).toEqual({ hello: 'Ada', n: 42 });
      expect(await result.innerText()).toMatch(/Took \d+(\.\d+)? ms in the service/);
      expect(await h.axe(page).then(describeViolations)).toEqual([]);
      await h.screenshot(page, 'script');

      // A syntax error: refused under the source, and no version 2.
      await page.getByRole('textbox', { name: 'Source' }).fill('export default () => {{');
      await page.getByRole('button', { name: 'Push new version' }).click();
      const source = page.getByRole('textbox', { name: 'Source' });
      await expect.poll(() => source.getAttribute('aria-invalid'), { timeout: 15_000 }).toBe('true');
      const errorId = ((await source.getAttribute('aria-describedby')) ?? '').split(' ').pop();
      expect(await page.locator(`[id="${errorId}"]`).innerText()).toMatch(/does not compile/);
      expect((await h.svc.api.get('/v1/scripts?name=greet', key)).body.data).toHaveLength(1);

      await source.fill('export default () => { throw new Error("no thanks"); };\n');
      await page.getByRole('button', { name: 'Push new version' }).click();
      await expect
        .poll(() => page.locator('dl.facts').innerText(), { timeout: 15_000 })
        .toMatch(/Version\s+2 \(latest\)/);
      await page.getByRole('button', { name: 'Run script' }).click();
      const failed = page.getByRole('region', { name: 'The run failed' });
      await expect.poll(() => failed.count(), { timeout: 15_000 }).toBe(1);
      expect(await failed.innerText()).toMatch(/The script threw[\s\S]*no thanks[\s\S]*SCRIPT_ERROR/);
      expect(await h.axe(page).then(describeViolations)).toEqual([]);
      await h.screenshot(page, 'script-error');
      // The first version is still there, and still runs.
      await page.getByLabel('Version to run').selectOption('1');
      await page.getByRole('button', { name: 'Run script' }).click();
      await expect.poll(() => page.getByRole('region', { name: 'Result' }).count(), { timeout: 15_000 }).toBe(1);
      expect(p.elsewhere).toEqual([]);
      expect(p.problems).toEqual([]);
    },
  );

  it('declares a trigger rule and sees its failure after a record is written', async () => {
    const p = await h.newPage();
    const { page } = p;
    await h.signIn(p);
    await page.getByRole('navigation', { name: 'Screens' }).getByRole('link', { name: 'Scripts and triggers' }).click();
    await page.getByRole('link', { name: 'Trigger rules and failures' }).click();
    await expect.poll(() => page.getByRole('heading', { name: 'Trigger rules', level: 1 }).count()).toBe(1);
    await page.getByLabel('Rule name').fill('on-order');
    await expect.poll(() => page.getByLabel('Record type').innerText()).toMatch(/order/);
    await page.getByLabel('Record type').selectOption({ label: 'order' });
    await page.getByLabel('Script name').fill('greet');
    await page.getByLabel('Script version').fill('2');
    await page.getByLabel('Fields passed to the script').fill('item');
    await page.getByRole('button', { name: 'Declare rule' }).click();
    const rules = page.getByRole('table', { name: 'Trigger rules of this context' });
    await expect
      .poll(() => rules.innerText(), { timeout: 15_000 })
      .toMatch(/on-order\s+order\s+CREATE\s+greet@2\s+item\s+records:r\s+yes/);

    const r = await h.svc.api.post('/v1/records', key, { typeName: 'order', payload: { item: 'tea' } });
    expect(r.status, r.text).toBe(201);
    const failures = page.getByRole('table', { name: 'Trigger failures' });
    await expect
      .poll(
        async () => {
          await page.getByRole('button', { name: 'Refresh' }).click();
          return failures.innerText();
        },
        { timeout: 30_000, interval: 1000 },
      )
      .toMatch(new RegExp(`greet@2\\s+${r.body.id}\\s+CREATE\\s+SCRIPT_ERROR: no thanks\\s+1`));
    expect(await h.axe(page).then(describeViolations)).toEqual([]);
    await h.screenshot(page, 'triggers');
    expect(p.elsewhere).toEqual([]);
    expect(p.problems).toEqual([]);
  });
});
