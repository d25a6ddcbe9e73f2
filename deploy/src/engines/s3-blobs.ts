import { randomBytes } from 'node:crypto';
import { Readable, Transform } from 'node:stream';
import {
  CopyObjectCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  HeadBucketCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
} from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import type { BlobStore, PresignedBlobUrls } from '@svc/domain';
import { BlobTooLargeError } from './blobs';

/** The header a presigned S3 upload requires (S3 user metadata, signed into the URL). */
export const S3_UPLOAD_HEADER = 'x-amz-meta-upload-grant';

export interface S3Location {
  endpoint: string;
  region: string;
  bucket: string;
  /** Key prefix inside the bucket ('' or ending in '/'). */
  prefix: string;
  forcePathStyle: boolean;
  credentials?: { accessKeyId: string; secretAccessKey: string };
}

/**
 * OBJECT_STORE_URL:
 * `s3://[ACCESS_KEY:SECRET_KEY@]host[:port]/bucket[/prefix]?region=us-east-1&forcePathStyle=true&tls=false`.
 * Credentials are URL-encoded; without them the AWS default provider chain is used. `tls` defaults to true (https),
 * `forcePathStyle` to false, `region` to us-east-1.
 */
export function parseObjectStoreUrl(raw: string): S3Location {
  const u = new URL(raw);
  if (u.protocol !== 's3:') throw new Error('OBJECT_STORE_URL must start with s3://');
  const [bucket, ...rest] = u.pathname.replace(/^\/+/, '').split('/').filter(Boolean);
  if (!u.hostname || !bucket)
    throw new Error('OBJECT_STORE_URL must name a host and a bucket: s3://KEY:SECRET@host:port/bucket');
  const flag = (name: string, dflt: boolean) => {
    const v = u.searchParams.get(name);
    return v === null ? dflt : v === 'true' || v === '1';
  };
  const tls = flag('tls', true);
  return {
    endpoint: `${tls ? 'https' : 'http'}://${u.host}`,
    region: u.searchParams.get('region') || 'us-east-1',
    bucket,
    prefix: rest.length ? rest.join('/') + '/' : '',
    forcePathStyle: flag('forcePathStyle', false),
    credentials: u.username
      ? { accessKeyId: decodeURIComponent(u.username), secretAccessKey: decodeURIComponent(u.password) }
      : undefined,
  };
}

const notFound = (e: unknown) => {
  const err = e as { name?: string; $metadata?: { httpStatusCode?: number } };
  return err?.name === 'NoSuchKey' || err?.name === 'NotFound' || err?.$metadata?.httpStatusCode === 404;
};

/**
 * The S3-compatible BlobStore (OBJECT_STORE_URL). Puts stream through
 * lib-storage's multipart Upload (5 MB parts, so memory stays bounded); a put
 * over `maxBytes` is aborted and nothing is stored. It also signs the
 * presigned upload and download URLs, which the object store serves itself.
 */
export class S3BlobStore implements BlobStore, PresignedBlobUrls {
  readonly client: S3Client;

  constructor(
    readonly location: S3Location,
    private readonly ttlSeconds = 900,
  ) {
    this.client = new S3Client({
      endpoint: location.endpoint,
      region: location.region,
      forcePathStyle: location.forcePathStyle,
      credentials: location.credentials,
      // Plain requests only: some S3-compatible stores do not understand the newer default checksum headers.
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
    });
  }

  static fromUrl(url: string, ttlSeconds?: number): S3BlobStore {
    return new S3BlobStore(parseObjectStoreUrl(url), ttlSeconds);
  }

  /** Fails fast when the bucket is not reachable with these credentials. */
  async check(): Promise<void> {
    await this.client.send(new HeadBucketCommand({ Bucket: this.location.bucket }));
  }

  private keyOf(key: string): string {
    if (!key || key.includes('\0') || key.split('/').some((p) => p === '' || p === '.' || p === '..'))
      throw new Error(`invalid blob key: ${key}`);
    return this.location.prefix + key;
  }

  async put(
    key: string,
    body: Readable | Buffer | string,
    opts: { contentType?: string; maxBytes?: number } = {},
  ): Promise<{ bytes: number }> {
    const Key = this.keyOf(key);
    let bytes = 0;
    let tooLarge = false;
    const source = typeof body === 'string' || Buffer.isBuffer(body) ? Readable.from([Buffer.from(body)]) : body;
    const counted = source.pipe(
      new Transform({
        transform(chunk: Buffer, _enc, cb) {
          bytes += chunk.length;
          if (opts.maxBytes !== undefined && bytes > opts.maxBytes) {
            tooLarge = true;
            return cb(new BlobTooLargeError(opts.maxBytes));
          }
          cb(null, chunk);
        },
      }),
    );
    source.on('error', (e) => counted.destroy(e));
    const upload = new Upload({
      client: this.client,
      params: { Bucket: this.location.bucket, Key, Body: counted, ContentType: opts.contentType },
      queueSize: 2,
      partSize: 5 * 1024 * 1024,
    });
    try {
      await upload.done();
    } catch (e) {
      await upload.abort().catch(() => {});
      if (tooLarge) throw new BlobTooLargeError(opts.maxBytes!);
      throw e;
    }
    return { bytes };
  }

  async stream(key: string): Promise<Readable | null> {
    try {
      const r = await this.client.send(new GetObjectCommand({ Bucket: this.location.bucket, Key: this.keyOf(key) }));
      return r.Body as Readable;
    } catch (e) {
      if (notFound(e)) return null;
      throw e;
    }
  }

  async get(key: string): Promise<Buffer | null> {
    const s = await this.stream(key);
    if (!s) return null;
    const chunks: Buffer[] = [];
    for await (const c of s) chunks.push(Buffer.from(c as Buffer));
    return Buffer.concat(chunks);
  }

  async delete(key: string): Promise<void> {
    await this.client.send(new DeleteObjectCommand({ Bucket: this.location.bucket, Key: this.keyOf(key) }));
  }

  /**
   * Lists the prefix page by page and deletes object by object (plain DeleteObject: every S3-compatible store has it).
   */
  async deletePrefix(prefix: string): Promise<number> {
    if (!prefix.endsWith('/')) throw new Error(`invalid blob prefix: ${prefix}`);
    const Prefix = this.keyOf(prefix.slice(0, -1)) + '/';
    let n = 0;
    for (;;) {
      const page = await this.client.send(
        new ListObjectsV2Command({ Bucket: this.location.bucket, Prefix, MaxKeys: 1000 }),
      );
      const keys = (page.Contents ?? []).map((o) => o.Key!).filter(Boolean);
      if (!keys.length) return n;
      for (let i = 0; i < keys.length; i += 16)
        await Promise.all(
          keys
            .slice(i, i + 16)
            .map((Key) => this.client.send(new DeleteObjectCommand({ Bucket: this.location.bucket, Key }))),
        );
      n += keys.length;
    }
  }

  /** Size and metadata of an object, or null when there is none. */
  async head(
    key: string,
  ): Promise<{ bytes: number; contentType?: string; etag?: string; metadata: Record<string, string> } | null> {
    try {
      const r = await this.client.send(new HeadObjectCommand({ Bucket: this.location.bucket, Key: this.keyOf(key) }));
      return {
        bytes: Number(r.ContentLength ?? 0),
        contentType: r.ContentType,
        etag: r.ETag,
        metadata: r.Metadata ?? {},
      };
    } catch (e) {
      if (notFound(e)) return null;
      throw e;
    }
  }

  async exists(key: string): Promise<boolean> {
    return (await this.head(key)) !== null;
  }

  /** Server-side copy (the object never passes through this process). */
  async copy(from: string, to: string): Promise<void> {
    const src = `${this.location.bucket}/${this.keyOf(from).split('/').map(encodeURIComponent).join('/')}`;
    await this.client.send(
      new CopyObjectCommand({
        Bucket: this.location.bucket,
        Key: this.keyOf(to),
        CopySource: src,
        MetadataDirective: 'COPY',
      }),
    );
  }

  /**
   * A presigned PUT: Content-Type and the `x-amz-meta-upload-grant` header
   * (a random value returned to the client) are signed headers, so omitting or
   * changing either is the store's own 403 SignatureDoesNotMatch.
   */
  async upload(o: { key: string; contentType: string; now: Date }) {
    const grant = randomBytes(24).toString('base64url');
    const cmd = new PutObjectCommand({
      Bucket: this.location.bucket,
      Key: this.keyOf(o.key),
      ContentType: o.contentType,
      Metadata: { 'upload-grant': grant },
    });
    const uploadUrl = await getSignedUrl(this.client, cmd, {
      expiresIn: this.ttlSeconds,
      signingDate: o.now,
      signableHeaders: new Set(['content-type', S3_UPLOAD_HEADER]),
      unhoistableHeaders: new Set([S3_UPLOAD_HEADER]),
    });
    return {
      uploadUrl,
      expiresAt: new Date(o.now.getTime() + this.ttlSeconds * 1000).toISOString(),
      requiredHeaderName: S3_UPLOAD_HEADER,
      requiredHeaderValue: grant,
    };
  }

  /** A presigned GET that answers with the document's type and file name. */
  async download(o: { key: string; contentType: string | null; fileName: string | null; now: Date }) {
    const cmd = new GetObjectCommand({
      Bucket: this.location.bucket,
      Key: this.keyOf(o.key),
      ResponseContentType: o.contentType ?? undefined,
      ResponseContentDisposition: o.fileName
        ? `attachment; filename*=UTF-8''${encodeURIComponent(o.fileName)}`
        : undefined,
    });
    const downloadUrl = await getSignedUrl(this.client, cmd, { expiresIn: this.ttlSeconds, signingDate: o.now });
    return { downloadUrl, expiresAt: new Date(o.now.getTime() + this.ttlSeconds * 1000).toISOString() };
  }

  close(): void {
    this.client.destroy();
  }
}
