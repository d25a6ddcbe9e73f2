import { FileBlobStore } from '@svc/deploy';
import { tempDir } from '../support/engines';
import { blobStoreContract } from './blob-store.contract';

blobStoreContract('files under DATA_DIR (embedded)', async () => {
  const tmp = tempDir('svc-blobs-');
  return Object.assign(new FileBlobStore(tmp.dir), { dispose: async () => tmp.remove() });
});
