import { launchChromium } from '../src/support/browser';
import { ensureConsoleBuilt } from '../src/support/console';
import { startHttpService } from './http';

/**
 * Section 14 (BENCH_ONLY=console; issue 47): the web console's first screen (the sign-in) as a browser gets it from a
 * local service (a child process, as `npm start` runs it):
 *
 *  (a) the JavaScript it downloads, compressed as served (gzip; the Content-Length of each script response of the
 *      page's load), against the 250 KB budget;
 *  (b) the time from the start of navigation to the sign-in form being usable (its field rendered by the app, so its
 *      code ran and its handlers are attached: `performance.now()` in the page), each load in a fresh browser context
 *      (empty cache), BENCH_CONSOLE_LOADS (default 10) loads after one warm-up; the median against 1 s, and the max.
 */
export interface ConsoleBench {
  scripts: Array<{ url: string; bytes: number }>;
  jsBytes: number;
  cssBytes: number;
  loadsMs: number[];
  medianMs: number;
  maxMs: number;
}

declare const document: { querySelector(s: string): unknown };
declare const performance: { now(): number };

export async function benchConsole(o: {
  newDir: (prefix: string) => string;
  loads: number;
  log: (s: string) => void;
}): Promise<ConsoleBench> {
  await ensureConsoleBuilt();
  const svc = await startHttpService(o.newDir('console-'));
  const browser = await launchChromium();
  try {
    const url = `${svc.url}/console`;
    const once = async () => {
      const context = await browser.newContext();
      const page = await context.newPage();
      const sizes: Array<{ url: string; bytes: number; type: string }> = [];
      page.on('response', (r) => {
        const type = r.headers()['content-type'] ?? '';
        sizes.push({ url: r.url(), bytes: Number(r.headers()['content-length'] ?? 0), type });
      });
      await page.goto(url);
      const ms = (await (
        await page.waitForFunction(
          () => (document.querySelector('input[type=password]') ? performance.now() : 0),
          undefined,
          { polling: 'raf', timeout: 30_000 },
        )
      ).jsonValue()) as number;
      await context.close();
      return { ms, sizes };
    };
    await once(); // warm-up: the service reads and compresses its files on the first request
    const loadsMs: number[] = [];
    let last: Awaited<ReturnType<typeof once>> | undefined;
    for (let i = 0; i < o.loads; i++) {
      last = await once();
      loadsMs.push(last.ms);
    }
    const scripts = last!.sizes
      .filter((s) => s.type.startsWith('text/javascript'))
      .map(({ url: u, bytes }) => ({ url: u.replace(svc.url, ''), bytes }));
    const cssBytes = last!.sizes.filter((s) => s.type.startsWith('text/css')).reduce((n, s) => n + s.bytes, 0);
    const sorted = [...loadsMs].sort((a, b) => a - b);
    const result = {
      scripts,
      jsBytes: scripts.reduce((n, s) => n + s.bytes, 0),
      cssBytes,
      loadsMs,
      medianMs: sorted[Math.floor(sorted.length / 2)],
      maxMs: sorted.at(-1)!,
    };
    o.log(
      `console: first screen ${scripts.map((s) => `${s.url} ${s.bytes} B`).join(', ')}; loads ` +
        `${loadsMs.map((m) => m.toFixed(0)).join(', ')} ms`,
    );
    return result;
  } finally {
    await browser.close();
    await svc.stop();
  }
}
