import type { TestService } from '../support/service';

/**
 * The keyword engine the black-box search suite (search.e2e.spec.ts) runs on:
 * the embedded default (PostgreSQL full-text search on PGlite) unless a wrapper
 * spec (search.es.e2e.spec.ts) sets another one before it imports the suite.
 * Each spec file has its own module graph, so the setting stays in that file.
 */
export interface SearchE2eEngine {
  name: string;
  /** Extra service environment (the engine's URL). */
  env: Record<string, string>;
  /** Makes the keyword leg fail (the degradation test), and undoes it. */
  breakTextLeg(svc: TestService): Promise<void>;
  restoreTextLeg(svc: TestService): Promise<void>;
}

export const searchE2eEngine: SearchE2eEngine = {
  name: 'embedded',
  env: {},
  breakTextLeg: async (svc) => {
    await svc.service.searchSql.exec('ALTER TABLE ti_passages RENAME TO ti_passages_off');
    // The embedded service answers keywords from memory (docs/search.md): free it, so the keyword leg must read the broken store.
    const text = svc.service.search!.text as { unload?: () => void };
    if (typeof text.unload !== 'function') throw new Error('the embedded keyword index should be the in-memory one');
    text.unload();
  },
  restoreTextLeg: (svc) => svc.service.searchSql.exec('ALTER TABLE ti_passages_off RENAME TO ti_passages'),
};

export function useSearchEngine(e: SearchE2eEngine): void {
  Object.assign(searchE2eEngine, e);
}
