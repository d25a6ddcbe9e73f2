import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CHROMIUM_SKIP_REASON } from '../support/browser';
import { tempDir } from '../support/engines';
import { describeViolations, startConsole, type ConsoleHarness } from '../support/console';
import { makeCertificates, Receiver } from '../e2e/webhooks-receiver';

/**
 * The console's Tokens screen and the developer portal in Chromium: a person mints a scoped token (the API then
 * takes it within its scope), revokes it (the API then refuses it), and sees a bad action refused at its field; with
 * the developer token, adds and verifies a domain (a DNS TXT record), adds a webhook, and sees its delivery to a local
 * HTTPS receiver fail (FAILED after its retries) in the delivery history, then retries it and sees it delivered.
 */
describe.skipIf(!!CHROMIUM_SKIP_REASON)('the web console: tokens and the developer portal', () => {
  let h: ConsoleHarness;
  let receiver: Receiver;
  const dir = tempDir('svc-console-hooks-');
  const dnsFile = join(dir.dir, 'dns.json');
  const dns: Record<string, string[]> = { 'hooks.example.test': ['127.0.0.1'] };
  beforeAll(async () => {
    const certs = makeCertificates(dir.dir);
    receiver = await new Receiver(certs).start();
    writeFileSync(dnsFile, JSON.stringify(dns));
    h = await startConsole({
      env: {
        WEBHOOK_RETRY_SCALE: '0.0001',
        WEBHOOK_ALLOW_PRIVATE_TARGETS: '1',
        WEBHOOK_CA_FILE: certs.caFile,
        WEBHOOK_TEST_DNS_FILE: dnsFile,
      },
    });
  }, 240_000);
  afterAll(async () => {
    await h?.stop();
    await receiver?.stop();
    dir.remove();
  });

  it('mints a scoped token the API takes, revokes it, and the API refuses it from then on', async () => {
    const p = await h.newPage();
    const { page } = p;
    await h.signIn(p);
    await page.getByRole('navigation', { name: 'Screens' }).getByRole('link', { name: 'Tokens' }).click();
    await expect.poll(() => page.getByRole('heading', { name: 'Tokens', level: 1 }).count()).toBe(1);

    // A bad action: refused at its field, nothing minted.
    await page.getByLabel('Allowed actions').fill('records-read');
    await page.getByRole('button', { name: 'Mint token' }).click();
    const actions = page.getByLabel('Allowed actions');
    await expect.poll(() => actions.getAttribute('aria-invalid'), { timeout: 15_000 }).toBe('true');
    const errorId = ((await actions.getAttribute('aria-describedby')) ?? '').split(' ').pop();
    expect(await page.locator(`[id="${errorId}"]`).innerText()).toMatch(/<resource>:<action>/);
    expect(await page.getByRole('table', { name: 'Tokens minted in this tab' }).innerText()).toMatch(/No token minted/);
    expect(await h.axe(page).then(describeViolations)).toEqual([]);
    await h.screenshot(page, 'token-refused');

    await actions.fill('schemas:r');
    await page.getByLabel('Time to live (seconds)').fill('600');
    await page.getByRole('button', { name: 'Mint token' }).click();
    await expect.poll(() => page.getByLabel('New token').count(), { timeout: 15_000 }).toBe(1);
    const token = await page.getByLabel('New token').inputValue();
    expect(token.length).toBeGreaterThan(20);
    // The API takes it, within its scope only.
    expect((await h.svc.api.get('/v1/schemas', token)).status).toBe(200);
    expect((await h.svc.api.get('/v1/records?type=x', token)).status).toBe(403);
    const row = page.getByRole('table', { name: 'Tokens minted in this tab' }).getByRole('row').nth(1);
    expect(await row.innerText()).toMatch(/schemas:r/);
    expect(await h.axe(page).then(describeViolations)).toEqual([]);
    await h.screenshot(page, 'tokens');

    await row.getByRole('button', { name: /Revoke token/ }).click();
    await expect.poll(() => row.innerText(), { timeout: 15_000 }).toMatch(/revoked/);
    expect(await page.getByRole('status').filter({ hasText: 'is revoked' }).count()).toBe(1);
    await expect.poll(async () => (await h.svc.api.get('/v1/schemas', token)).status, { timeout: 10_000 }).toBe(401);
    expect(p.elsewhere).toEqual([]);
    expect(p.problems).toEqual([]);
  });

  it(
    'with the developer token: verifies a domain, adds a webhook, sees its delivery fail, retries it and ' +
      'sees it delivered',
    async () => {
      const p = await h.newPage();
      const { page } = p;
      await h.signIn(p, h.svc.bootstrap.developerToken);
      await expect.poll(() => page.getByRole('heading', { name: 'Developer portal', level: 1 }).count()).toBe(1);
      await page.getByLabel('Tenant id').fill(h.svc.bootstrap.tenants.test.tenantId);
      await page.getByRole('button', { name: 'Use this tenant' }).click();

      // The domain: added, its token published as a TXT record, then verified from the console.
      await page
        .getByRole('navigation', { name: 'Developer portal sections' })
        .getByRole('link', { name: 'Domains' })
        .click();
      await page.getByRole('textbox', { name: 'Domain' }).fill('example.test');
      await page.getByRole('button', { name: 'Add domain' }).click();
      const domains = page.getByRole('table', { name: 'Domains of the account' });
      await expect.poll(() => domains.innerText(), { timeout: 15_000 }).toMatch(/example\.test\s+wv_/);
      const verification = (await domains.locator('code').first().innerText()).trim();
      dns['txt:_webhook-verify.example.test'] = [verification];
      writeFileSync(dnsFile, JSON.stringify(dns));
      await domains.getByRole('button', { name: 'Verify example.test' }).click();
      await expect.poll(() => domains.innerText(), { timeout: 15_000 }).toMatch(/example\.test\s+wv_\S+\s+yes/);

      await page
        .getByRole('navigation', { name: 'Developer portal sections' })
        .getByRole('link', { name: 'Webhooks' })
        .click();
      await page.getByLabel('URL').fill(`https://hooks.example.test:${receiver.port}/console`);
      await page.getByLabel('document.indexed').check();
      await page.getByRole('button', { name: 'Add webhook' }).click();
      await expect.poll(() => page.getByRole('status').innerText(), { timeout: 15_000 }).toMatch(/Webhook \S+ added/);
      expect(await h.axe(page).then(describeViolations)).toEqual([]);

      // A document of that tenant is indexed while the receiver is failing: the delivery is attempted, retried on the
      // schedule (scaled down here) and given up as FAILED; the console lists it.
      receiver.mode('/console', 'fail');
      const key = h.svc.bootstrap.tenants.test.rootKey;
      const doc = await h.svc.api.post('/v1/documents', key, {
        title: 'Hooked',
        text: 'A document whose indexing is announced.',
        indexMode: 'TEXT',
      });
      expect(doc.status).toBe(201);
      await page.reload();
      await page
        .getByRole('table', { name: 'Webhooks of this tenant' })
        .getByRole('link', { name: /hooks\.example\.test/ })
        .click();
      const history = page.getByRole('table', { name: 'Delivery history' });
      const row = new RegExp(`document\\.indexed\\s+document ${doc.body.id}\\s+FAILED\\s+6`);
      await expect
        .poll(
          async () => {
            await page.getByRole('button', { name: 'Refresh' }).click();
            return history.innerText();
          },
          { timeout: 60_000, interval: 1000 },
        )
        .toMatch(row);
      expect(receiver.received.filter((r) => r.path === '/console').length).toBe(6);
      expect(await h.axe(page).then(describeViolations)).toEqual([]);
      await h.screenshot(page, 'webhook-deliveries');

      // The receiver works again: Retry re-queues it, and it is delivered.
      receiver.mode('/console', 'ok');
      await history
        .getByRole('button', { name: /Retry delivery/ })
        .first()
        .click();
      await expect
        .poll(() => page.getByRole('status').filter({ hasText: 'Delivery' }).innerText(), { timeout: 15_000 })
        .toMatch(/is PENDING again/);
      await expect
        .poll(
          async () => {
            await page.getByRole('button', { name: 'Refresh' }).click();
            return history.innerText();
          },
          { timeout: 30_000, interval: 1000 },
        )
        .toMatch(new RegExp(`document\\.indexed\\s+document ${doc.body.id}\\s+DELIVERED\\s+7`));
      expect(receiver.received.filter((r) => r.path === '/console').map((r) => r.status)).toEqual([
        500, 500, 500, 500, 500, 500, 200,
      ]);
      expect(p.elsewhere).toEqual([]);
      expect(p.problems).toEqual([]);
    },
  );
});
