import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CHROMIUM_SKIP_REASON } from '../support/browser';
import { describeViolations, ingestIndexed, startConsole, type ConsoleHarness } from '../support/console';

/**
 * The console's Ask and chat screen in Chromium, on the built-in extractive model (offline): a question over the
 * context streams its answer (the text grows as the events arrive) beside the retrieved passages, with its cost;
 * asking one document shows that document; the model catalog and the balance are on the page; a missing document's 404
 * is shown.
 */
describe.skipIf(!!CHROMIUM_SKIP_REASON)('the web console: ask and chat', () => {
  let h: ConsoleHarness;
  let key: string;
  let copper: string;
  const ingest = (title: string, text: string) => ingestIndexed(h.svc, key, title, text);
  beforeAll(async () => {
    h = await startConsole();
    key = h.svc.bootstrap.tenants.test.rootKey;
    await ingest(
      'Notes on penguins',
      'The committee met on Tuesday. Emperor penguins incubate their eggs on their feet through the ' +
        'Antarctic winter. Lunch was served in the main hall.',
    );
    copper = await ingest(
      'Notes on copper',
      'Copper conducts electricity well because its outer electron moves freely through the metal lattice.',
    );
  }, 240_000);
  afterAll(async () => {
    await h?.stop();
  });

  it('streams an answer over the context beside the passages it was drawn from', async () => {
    const p = await h.newPage();
    const { page } = p;
    await h.signIn(p);
    await page.getByRole('navigation', { name: 'Screens' }).getByRole('link', { name: 'Ask and chat' }).click();
    await expect.poll(() => page.getByRole('heading', { name: 'Ask and chat', level: 1 }).count()).toBe(1);
    // The catalog and the balance, from the API.
    await expect.poll(() => page.getByLabel('Model').innerText()).toMatch(/Default \(builtin-extractive\)/);
    await expect.poll(() => page.locator('.balance').innerText()).toMatch(/Inference balance: \d+\.\d\d/);
    await page.getByText('Model catalog').click();
    expect(await page.getByRole('table', { name: 'Models' }).innerText()).toMatch(
      /builtin-extractive \(default\)\s+builtin/,
    );

    // Every length the answer's text has on the page, as the browser renders it.
    await page.evaluate(
      `(() => {
      window.lengths = [];
      const el = ` +
        `document.querySelector('[data-testid="answer"]');
      new MutationObserver(() => ` +
        `window.lengths.push(el.textContent.replace(/^…$/, '').length)).observe(el, { childList: true, ` +
        `characterData: true, subtree: true });
    })()`,
    );
    await page.getByLabel('Question').fill('How do penguins incubate their eggs?');
    await page.getByRole('button', { name: 'Ask' }).click();
    await expect.poll(() => page.locator('.cost').count(), { timeout: 30_000 }).toBe(1);
    const answer = await page.getByTestId('answer').innerText();
    expect(answer).toMatch(/Emperor penguins incubate their eggs on their feet/);
    // It grew: shown at several lengths on the way to the whole answer.
    const lengths = (await page.evaluate('window.lengths')) as number[];
    const partial = new Set(lengths.filter((n) => n > 0 && n < answer.length));
    expect(partial.size).toBeGreaterThan(1);
    expect(await page.locator('.cost').innerText()).toMatch(/builtin-extractive · \d+ tokens in, \d+ out/);
    const passages = page.getByRole('list', { name: 'Retrieved passages' });
    await expect.poll(() => passages.getByRole('listitem').first().innerText()).toMatch(/Notes on penguins · score/);
    expect(await passages.locator('mark').count()).toBeGreaterThan(0);
    expect(await h.axe(page).then(describeViolations)).toEqual([]);
    await h.screenshot(page, 'ask');
    expect(p.elsewhere).toEqual([]);
    expect(p.problems).toEqual([]);
  });

  it('asks one document, and shows the refusal of a document that is not there', async () => {
    const p = await h.newPage();
    const { page } = p;
    await h.signIn(p);
    await page.getByRole('navigation', { name: 'Screens' }).getByRole('link', { name: 'Ask and chat' }).click();
    await page.getByRole('link', { name: 'Ask a document' }).click();
    await page.getByLabel('Document id').fill(copper);
    await page.getByLabel('Prompt').fill('Why does copper conduct electricity?');
    await page.getByRole('button', { name: 'Ask' }).click();
    await expect.poll(() => page.getByTestId('answer').innerText(), { timeout: 30_000 }).toMatch(/outer electron/);
    await expect.poll(() => page.getByRole('region', { name: 'The document' }).innerText()).toMatch(/Notes on copper/);
    expect(await h.axe(page).then(describeViolations)).toEqual([]);
    await h.screenshot(page, 'ask-document');

    await page.getByLabel('Document id').fill('00000000-0000-4000-8000-000000000000');
    await page.getByRole('button', { name: 'Ask' }).click();
    await expect
      .poll(() => page.getByRole('alert').allInnerTexts(), { timeout: 15_000 })
      .toEqual(expect.arrayContaining([expect.stringMatching(/404/)]));
    expect(p.elsewhere).toEqual([]);
    expect(p.problems).toEqual([]);
  });
});
