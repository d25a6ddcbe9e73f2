import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * The malloc setting that keeps the idle service small (docs/operations.md "Memory") is given by `npm start` and by
 * the image alike: without it about 200 MB of start-up memory stays resident. The bench (tests/bench/memory.ts)
 * reads the same value from package.json.
 */
const ROOT = resolve(import.meta.dirname, '../..');
const read = (rel: string) => readFileSync(join(ROOT, rel), 'utf8');

describe('MALLOC_MMAP_THRESHOLD_', () => {
  it('npm start and the image set the same value', () => {
    const start = (JSON.parse(read('package.json')) as { scripts: Record<string, string> }).scripts.start;
    const fromStart = /MALLOC_MMAP_THRESHOLD_=\$\{MALLOC_MMAP_THRESHOLD_:-(\d+)\} node /.exec(start)?.[1];
    const fromImage = /^ENV MALLOC_MMAP_THRESHOLD_=(\d+)$/m.exec(read('deploy/Dockerfile'))?.[1];
    expect(fromStart).toBe('131072');
    expect(fromImage).toBe(fromStart);
  });
});
