import { describe, expect, it } from 'vitest';
import { parseObjectStoreUrl } from './s3-blobs';

describe('OBJECT_STORE_URL', () => {
  it('parses credentials, endpoint, bucket, prefix and options', () => {
    expect(
      parseObjectStoreUrl(
        's3://AK%2F1:SE%2Bcret@minio.local:9000/docs/svc/prod?region=eu-west-1&forcePathStyle=true&tls=false',
      ),
    ).toEqual({
      endpoint: 'http://minio.local:9000',
      region: 'eu-west-1',
      bucket: 'docs',
      prefix: 'svc/prod/',
      forcePathStyle: true,
      credentials: { accessKeyId: 'AK/1', secretAccessKey: 'SE+cret' },
    });
  });
  it('defaults: https, us-east-1, virtual-hosted style, the default credential chain', () => {
    expect(parseObjectStoreUrl('s3://s3.amazonaws.com/bucket')).toEqual({
      endpoint: 'https://s3.amazonaws.com',
      region: 'us-east-1',
      bucket: 'bucket',
      prefix: '',
      forcePathStyle: false,
      credentials: undefined,
    });
  });
  it('refuses another scheme or a missing bucket', () => {
    expect(() => parseObjectStoreUrl('http://host/bucket')).toThrow(/s3:\/\//);
    expect(() => parseObjectStoreUrl('s3://host')).toThrow(/bucket/);
  });
});
