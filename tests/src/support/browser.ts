import { existsSync } from 'node:fs';
import { chromium, type Browser } from 'playwright-core';

/**
 * Debian's chromium driven by playwright-core: no browser is downloaded at test time. `CHROMIUM_PATH` overrides the
 * executable. Browser suites skip with this reason when there is none (`.ci/run` installs it).
 */
export const CHROMIUM =
  process.env.CHROMIUM_PATH ?? ['/usr/bin/chromium', '/usr/bin/chromium-browser'].find((p) => existsSync(p));
export const CHROMIUM_SKIP_REASON = CHROMIUM
  ? undefined
  : 'no chromium (apt-get install chromium, or set CHROMIUM_PATH)';

export async function launchChromium(): Promise<Browser> {
  if (!CHROMIUM) throw new Error(CHROMIUM_SKIP_REASON);
  // --no-sandbox: CI runs as root, where Chromium's sandbox refuses to start.
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
  });
}
