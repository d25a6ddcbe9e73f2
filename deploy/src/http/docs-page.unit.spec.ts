import { describe, expect, it } from 'vitest';
import { roleOf } from './router-config';
import { DOCS_BUNDLE_PATH, DOCS_PATH } from './docs-page';

describe('the API reference page through the router', () => {
  it('sends /docs and its renderer to a role that serves them, never to the command role by default', () => {
    for (const url of [DOCS_PATH, DOCS_BUNDLE_PATH, `${DOCS_PATH}?x=1`]) {
      expect(roleOf('GET', url), url).toBe('query');
      expect(roleOf('HEAD', url), url).toBe('query');
    }
    // Only those two paths: anything else under /docs is not a route (the command role answers its 404).
    expect(roleOf('GET', '/docs/other.js')).toBe('command');
  });
});
