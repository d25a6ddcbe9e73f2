import { randomUUID } from 'node:crypto';
import { afterAll, describe, it } from 'vitest';
import { serverUrl } from '../support/engines';
import { useSearchEngine } from './search-engine';

/**
 * The black-box search suite (search.e2e.spec.ts, every test) on the service
 * with its keyword leg on Elasticsearch (ELASTICSEARCH_URL, an index prefix of
 * its own); vectors stay on LanceDB. The degradation test closes the index to
 * make the keyword leg fail, then reopens it.
 */
const url = serverUrl('elasticsearch');
if (!url) {
  describe.skip('search e2e on Elasticsearch: skipped because ELASTICSEARCH_URL is not set', () => {
    it('needs an Elasticsearch server (deploy/engines/elasticsearch.sh start)', () => {});
  });
} else {
  const base = url.replace(/\/$/, '');
  const prefix = `e2e-${randomUUID().slice(0, 8)}-`;
  const index = `${prefix}passages`;
  const es = async (method: string, path: string) => {
    const r = await fetch(`${base}${path}`, { method });
    if (!r.ok && r.status !== 404) throw new Error(`Elasticsearch ${method} ${path}: ${r.status} ${await r.text()}`);
  };
  useSearchEngine({
    name: 'elasticsearch',
    env: { ELASTICSEARCH_URL: url, ELASTICSEARCH_INDEX_PREFIX: prefix },
    breakTextLeg: () => es('POST', `/${index}/_close`),
    restoreTextLeg: () => es('POST', `/${index}/_open?wait_for_active_shards=1`),
  });
  afterAll(() => es('DELETE', `/${index}`));
  await import('./search.e2e.spec');
}
