import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../support/service';

/**
 * The console's build (console/scripts/build.mjs): the page starts the app's entry. Every lazily loaded screen is an
 * entry point of esbuild's metafile too; the page once named whichever came first, a screen's chunk, and never
 * started once there were enough screens to reorder them.
 */
describe('the console build', () => {
  it("names the app's entry (src/main.tsx) in index.html, and lists it first of the first screen's files", async () => {
    const build = (await import(join(ROOT, 'console/scripts/build.mjs'))) as {
      buildConsole(o: { quiet: boolean }): Promise<{ entry: string; firstScreen: string[]; files: string[] }>;
      CONSOLE_DIST: string;
    };
    const manifest = await build.buildConsole({ quiet: true });
    expect(manifest.entry).toMatch(/^app-\w+\.js$/);
    expect(manifest.firstScreen[0]).toBe(manifest.entry);
    // More scripts than the first screen's: the screens are their own chunks.
    expect(manifest.files.length).toBeGreaterThan(manifest.firstScreen.length);
    const html = readFileSync(join(build.CONSOLE_DIST, 'index.html'), 'utf8');
    expect([...html.matchAll(/<script[^>]*src="([^"]+)"/g)].map((m) => m[1])).toEqual([`console/${manifest.entry}`]);
  }, 60_000);
});
