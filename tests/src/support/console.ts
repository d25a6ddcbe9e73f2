import { mkdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { launchChromium } from './browser';
import { eventually, ROOT, startService, type TestService } from './service';

/**
 * The console's browser suites (tests/src/browser/console-*.e2e.spec.ts) share this: the console built from its
 * current sources, a started service (in this process, or the split deployment behind the router with
 * E2E_TARGET=router), Debian's chromium, pages that refuse and record every request to another origin (the console
 * is offline), signing in through the sign-in screen as a person does, axe-core on a screen, and screenshots into
 * docs/console/.
 */
export const SCREENSHOTS = join(ROOT, 'docs/console');

/** Builds console/dist when it is missing or older than a source of the console or of the client it bundles. */
export async function ensureConsoleBuilt(): Promise<void> {
  const build = (await import(join(ROOT, 'console/scripts/build.mjs'))) as {
    consoleUpToDate(): boolean;
    buildConsole(o: { quiet: boolean }): Promise<unknown>;
  };
  if (!build.consoleUpToDate()) await build.buildConsole({ quiet: true });
}

export interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  nodes: Array<{ target: string[] }>;
}

export interface ConsolePage {
  page: Page;
  context: BrowserContext;
  /** Requests the page tried to make to any origin but the service's (refused). */
  elsewhere: string[];
  /** Console errors and uncaught exceptions of the page. */
  problems: string[];
}

export interface ConsoleHarness {
  svc: TestService;
  browser: Browser;
  /** The console's address on the service (through the router with E2E_TARGET=router). */
  url: string;
  /** A fresh tab in its own browser context (its own sessionStorage), refusing requests elsewhere. */
  newPage(): Promise<ConsolePage>;
  /** Opens the console and signs in through the sign-in screen (default: the test tenant's root key). */
  signIn(p: ConsolePage, token?: string): Promise<void>;
  /** axe-core on the page as it is: the serious and critical violations (none expected). */
  axe(page: Page): Promise<AxeViolation[]>;
  /** A screenshot of the page into docs/console/<name>.png (shown in docs/console.md). */
  screenshot(page: Page, name: string): Promise<void>;
  stop(): Promise<void>;
}

/** Ingests a HYBRID text document through the API with `key` and waits until it is INDEXED; its id. */
export async function ingestIndexed(svc: TestService, key: string, title: string, text: string): Promise<string> {
  const r = await svc.api.post('/v1/documents', key, { title, text, indexMode: 'HYBRID' });
  if (r.status !== 201) throw new Error(`ingest ${title}: ${r.status} ${r.text}`);
  await eventually(
    async () => ((await svc.api.get(`/v1/documents/${r.body.id}`, key)).body.status === 'INDEXED' ? true : null),
    60_000,
    100,
  );
  return r.body.id as string;
}

const axeSource = () => readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

export async function startConsole(opts: { env?: Record<string, string> } = {}): Promise<ConsoleHarness> {
  await ensureConsoleBuilt();
  const [svc, browser] = await Promise.all([startService({ env: opts.env }), launchChromium()]);
  const url = `${svc.url}/console`;
  const origin = new URL(svc.url).origin;
  const contexts: BrowserContext[] = [];
  return {
    svc,
    browser,
    url,
    async newPage() {
      const context = await browser.newContext({ viewport: { width: 1280, height: 860 } });
      contexts.push(context);
      const page = await context.newPage();
      const elsewhere: string[] = [];
      const problems: string[] = [];
      await page.route('**/*', (r) => {
        const u = r.request().url();
        if (u.startsWith('data:') || new URL(u).origin === origin) return r.continue();
        elsewhere.push(u);
        return r.abort();
      });
      page.on('pageerror', (e) => problems.push(String(e)));
      page.on('console', (m) => {
        // A refusal the page shows (4xx) is logged by Chromium as a failed resource: that is the journey, not a
        // problem.
        if (
          m.type() === 'error' &&
          !/Failed to load resource: the server responded with a status of 4\d\d/.test(m.text())
        )
          problems.push(m.text());
      });
      return { page, context, elsewhere, problems };
    },
    async signIn(p, token = svc.bootstrap.tenants.test.rootKey) {
      await p.page.goto(url);
      await p.page.getByLabel('Key or token').fill(token);
      await p.page.getByRole('button', { name: 'Sign in' }).click();
      await p.page.getByRole('navigation', { name: 'Screens' }).waitFor({ timeout: 15_000 });
      // The shell moves to its home screen in an effect after its first render: until then a test's own navigation
      // could be overridden by it (seen through the router, where pages render later).
      await p.page.waitForFunction('location.hash.length > 1', undefined, { timeout: 15_000 });
    },
    async axe(page) {
      // Evaluated through the DevTools protocol, which the page's CSP (script-src 'self') does not govern.
      if (!(await page.evaluate('typeof axe !== "undefined"'))) await page.evaluate(axeSource());
      const result = (await page.evaluate('axe.run(document, { resultTypes: ["violations"] })')) as {
        violations: AxeViolation[];
      };
      return result.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
    },
    async screenshot(page, name) {
      mkdirSync(SCREENSHOTS, { recursive: true });
      await page.screenshot({ path: join(SCREENSHOTS, `${name}.png`), fullPage: true });
    },
    async stop() {
      for (const c of contexts) await c.close().catch(() => {});
      await browser?.close();
      await svc?.stop();
    },
  };
}

/** The violations as lines a failing assertion prints. */
export const describeViolations = (vs: AxeViolation[]) =>
  vs.map((v) => `${v.impact} ${v.id}: ${v.help} (${v.nodes.map((n) => n.target.join(' ')).join(', ')})`);
