import { LanceVectorIndex } from '@svc/search';
import { tempDir } from '../support/engines';
import { DIMS, vectorIndexContract } from './vector-index.contract';

vectorIndexContract('LanceDB', async () => {
  const tmp = tempDir('svc-vec-');
  return Object.assign(new LanceVectorIndex(tmp.dir, 'contract', DIMS), { dispose: async () => tmp.remove() });
});
