// The browser example (examples/browser/index.html) served from an origin of its own and driven in Chromium as a
// user would: fill the form, press the button, read the outcome. Shared by the browser suites (minted tokens, JWTs).
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import type { Browser, ConsoleMessage, Page } from 'playwright-core';
import { ROOT } from '../support/service';

export const EXAMPLE_PAGE = join(ROOT, 'examples/browser/index.html');

export interface OriginServer {
  /** `http://127.0.0.1:<port>`: what the browser sends as Origin, and what CORS_ORIGINS must list. */
  origin: string;
  close(): Promise<void>;
}

/**
 * Serves the example page (read at each request, so it is the file as checked in) at `/` on a loopback port of its own.
 */
export async function startOrigin(page = EXAMPLE_PAGE): Promise<OriginServer> {
  const server = createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    if (req.method !== 'GET' || (path !== '/' && path !== '/index.html')) return void res.writeHead(404).end();
    res
      .writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' })
      .end(readFileSync(page));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    origin: `http://127.0.0.1:${port}`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** What an action of the page ended with: its data-state and the result it recorded (or the error it showed). */
export interface Outcome {
  state: 'done' | 'error';
  result: Record<string, any>;
}

export interface ExamplePage {
  page: Page;
  /** The page's console errors so far (a blocked request is reported there, naming CORS). */
  consoleErrors: string[];
  create(title: string, body: string): Promise<Outcome>;
  search(query: string): Promise<Outcome>;
  ask(question: string): Promise<Outcome>;
}

/**
 * Opens the example at `origin` with its settings in the fragment (the API's base URL, the bearer token, the record
 * type).
 */
export async function openExample(
  browser: Browser,
  origin: string,
  settings: { api: string; token: string; type: string },
): Promise<ExamplePage> {
  const page = await browser.newPage();
  const consoleErrors: string[] = [];
  page.on('console', (m: ConsoleMessage) => void (m.type() === 'error' && consoleErrors.push(m.text())));
  page.on('pageerror', (e) => consoleErrors.push(String(e)));
  const answer = await page.goto(`${origin}/#${new URLSearchParams(settings)}`);
  if (answer?.status() !== 200) throw new Error(`the example page answered ${answer?.status()}`);
  /** Fills the inputs, presses the button, waits for its output to leave `busy`. */
  const run = async (button: string, fields: Record<string, string>): Promise<Outcome> => {
    for (const [id, value] of Object.entries(fields)) await page.fill(`#${id}`, value);
    await page.click(`#${button}`);
    const output = page.locator(`#${button}-output`);
    await page.waitForSelector(`#${button}-output[data-state="done"], #${button}-output[data-state="error"]`, {
      timeout: 60_000,
    });
    return {
      state: (await output.getAttribute('data-state')) as Outcome['state'],
      result: JSON.parse((await output.getAttribute('data-result')) ?? '{}'),
    };
  };
  return {
    page,
    consoleErrors,
    create: (title, body) => run('create', { title, body }),
    search: (query) => run('search', { query }),
    ask: (question) => run('ask', { question }),
  };
}
