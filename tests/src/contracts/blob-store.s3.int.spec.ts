import { S3BlobStore } from '@svc/deploy';
import { startObjectStore } from '../support/object-store';
import { blobStoreContract } from './blob-store.contract';

blobStoreContract('S3-compatible object store (s3rver in-process)', async () => {
  const s3 = await startObjectStore();
  const store = S3BlobStore.fromUrl(s3.url);
  await store.check();
  return Object.assign(store, {
    dispose: async () => {
      store.close();
      await s3.stop();
    },
  });
});
