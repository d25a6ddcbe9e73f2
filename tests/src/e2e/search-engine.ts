import { randomUUID } from 'node:crypto';
import { serverUrl } from '../support/engines';
import { THROUGH_ROUTER, type TestService } from '../support/service';

/**
 * A keyword engine the black-box search suite (search-suite.ts) runs on: the
 * embedded default (PostgreSQL full-text search on PGlite) in search.e2e.spec.ts,
 * Elasticsearch in search.es.e2e.spec.ts.
 */
export interface SearchE2eEngine {
  name: string;
  /** Extra service environment (the engine's URL). */
  env: Record<string, string>;
  /** Makes the keyword leg fail (the degradation test), and undoes it. */
  breakTextLeg(svc: TestService): Promise<void>;
  restoreTextLeg(svc: TestService): Promise<void>;
}

/**
 * The keyword leg on Elasticsearch at `url`, in indexes of a prefix of its own; the degradation test closes the index.
 */
export function elasticsearchEngine(
  url: string,
  prefix = `e2e-${randomUUID().slice(0, 8)}-`,
): SearchE2eEngine & { dropIndex(): Promise<void> } {
  const base = url.replace(/\/$/, '');
  const index = `${prefix}passages`;
  const es = async (method: string, path: string) => {
    const r = await fetch(`${base}${path}`, { method });
    if (!r.ok && r.status !== 404) throw new Error(`Elasticsearch ${method} ${path}: ${r.status} ${await r.text()}`);
  };
  return {
    name: 'elasticsearch',
    env: { ELASTICSEARCH_URL: url, ELASTICSEARCH_INDEX_PREFIX: prefix },
    breakTextLeg: () => es('POST', `/${index}/_close`),
    restoreTextLeg: () => es('POST', `/${index}/_open?wait_for_active_shards=1`),
    dropIndex: () => es('DELETE', `/${index}`),
  };
}

const embedded: SearchE2eEngine = {
  name: 'embedded',
  env: {},
  breakTextLeg: async (svc) => {
    await svc.service.searchSql.exec('ALTER TABLE ti_passages RENAME TO ti_passages_off');
    // The embedded service answers keywords from memory (docs/search.md): free it, so the keyword leg must read the
    // broken store.
    const text = svc.service.search!.text as { unload?: () => void };
    if (typeof text.unload !== 'function') throw new Error('the embedded keyword index should be the in-memory one');
    text.unload();
  },
  restoreTextLeg: (svc) => svc.service.searchSql.exec('ALTER TABLE ti_passages_off RENAME TO ti_passages'),
};

/** Through the router (E2E_TARGET=router) the split deployment's keyword leg is on Elasticsearch. */
export const searchE2eEngine: SearchE2eEngine =
  THROUGH_ROUTER && serverUrl('elasticsearch') ? elasticsearchEngine(serverUrl('elasticsearch')!) : embedded;
