import { afterAll, describe, it } from 'vitest';
import { serverUrl } from '../support/engines';
import { elasticsearchEngine } from './search-engine';
import { searchSuite } from './search-suite';

/**
 * The black-box search suite (every test of search.e2e.spec.ts) on the service
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
  afterAll(() => engine.dropIndex());
  searchSuite(engine);
}
