import { afterAll, describe, it } from 'vitest';
import { serverUrl } from '../support/engines';
import { elasticsearchEngine, useSearchEngine } from './search-engine';

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
  const engine = elasticsearchEngine(url);
  useSearchEngine(engine);
  afterAll(() => engine.dropIndex());
  await import('./search.e2e.spec');
}
