import { randomUUID } from 'node:crypto';
import { describe } from 'vitest';
import { ElasticsearchTextIndex } from '@svc/projectors/search/es';
import { serverUrl } from '../support/engines';
import { textIndexContract } from './text-index.contract';

const url = serverUrl('elasticsearch');
if (!url) describe.skip('text index contract: Elasticsearch (ELASTICSEARCH_URL not set; no server runs on the build machines)', () => {});
else
  textIndexContract('Elasticsearch', async () => {
    const index = `test-passages-${randomUUID()}`;
    const ix = new ElasticsearchTextIndex({ url, index });
    return Object.assign(ix, {
      dispose: async () => {
        await fetch(`${url.replace(/\/$/, '')}/${index}`, { method: 'DELETE' }).catch(() => {});
      },
    });
  });
