import { createHash, createHmac, randomUUID, timingSafeEqual } from 'node:crypto';
// @ts-expect-error s3rver ships no type declarations
import S3rver from 's3rver';
import { tempDir } from './engines';

/** s3rver's only account (it accepts no other access key). */
const ACCESS_KEY = 'S3RVER';
const SECRET_KEY = 'S3RVER';

const hmac = (key: Buffer | string, data: string) => createHmac('sha256', key).update(data).digest();

/**
 * s3rver 3 parses SigV4 but does not verify it ("Signature version 4
 * calculation is unimplemented" in its authentication middleware), so a
 * presigned PUT without its signed headers would be accepted. This Koa
 * middleware, put in front of s3rver's routes, checks presigned (query) SigV4
 * requests as S3 does: canonical request over the method, path, query (minus
 * the signature), the signed headers and UNSIGNED-PAYLOAD. A mismatch is the
 * store's 403 SignatureDoesNotMatch in S3's XML shape. Header-signed SDK
 * requests are passed through unchecked.
 */
function sigV4QueryVerifier() {
  return async (ctx: any, next: () => Promise<void>) => {
    const raw: string = ctx.originalUrl;
    const q = raw.indexOf('?');
    const query = q >= 0 ? raw.slice(q + 1) : '';
    if (!/(^|&)X-Amz-Signature=/.test(query)) return next();
    const pairs = query
      .split('&')
      .filter(Boolean)
      .map((p) => {
        const i = p.indexOf('=');
        return i < 0 ? [p, ''] : [p.slice(0, i), p.slice(i + 1)];
      });
    const get = (k: string) => decodeURIComponent(pairs.find(([n]) => n === k)?.[1] ?? '');
    const signature = get('X-Amz-Signature');
    const [, ...scopeParts] = get('X-Amz-Credential').split('/');
    const scope = scopeParts.join('/');
    const [day, region, service] = scopeParts;
    const signed = get('X-Amz-SignedHeaders').split(';');
    const canonicalQuery = pairs
      .filter(([k]) => k !== 'X-Amz-Signature')
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([k, v]) => `${k}=${v}`)
      .join('&');
    const headers = signed
      .map(
        (h) =>
          `${h}:${String(ctx.req.headers[h] ?? '')
            .trim()
            .replace(/\s+/g, ' ')}\n`,
      )
      .join('');
    const canonical = [
      ctx.method,
      q >= 0 ? raw.slice(0, q) : raw,
      canonicalQuery,
      headers,
      signed.join(';'),
      'UNSIGNED-PAYLOAD',
    ].join('\n');
    const toSign = [
      'AWS4-HMAC-SHA256',
      get('X-Amz-Date'),
      scope,
      createHash('sha256').update(canonical).digest('hex'),
    ].join('\n');
    const key = hmac(hmac(hmac(hmac(`AWS4${SECRET_KEY}`, day), region), service), 'aws4_request');
    const expected = Buffer.from(hmac(key, toSign).toString('hex'));
    const given = Buffer.from(signature);
    if (expected.length === given.length && timingSafeEqual(expected, given)) return next();
    ctx.req.resume();
    ctx.status = 403;
    ctx.type = 'application/xml';
    ctx.body =
      `<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>SignatureDoesNotMatch</Code><Message>The ` +
      `request signature we calculated does not match the signature you provided. Check your key and signing ` +
      `method.</Message><RequestId>${randomUUID()}</RequestId></Error>`;
  };
}

export interface TestObjectStore {
  /** OBJECT_STORE_URL for the service. */
  url: string;
  endpoint: string;
  bucket: string;
  /** s3rver's directory: a test can put an object in the state a non-atomic write passes through. */
  directory: string;
  stop(): Promise<void>;
}

/**
 * s3rver in this process on a loopback port with a temporary directory and one bucket, plus the SigV4 verifier above.
 */
export async function startObjectStore(bucket = 'svc-test'): Promise<TestObjectStore> {
  const tmp = tempDir('svc-s3rver-');
  const server = new S3rver({
    port: 0,
    address: '127.0.0.1',
    directory: tmp.dir,
    silent: true,
    configureBuckets: [{ name: bucket }],
  });
  server.middleware.unshift(sigV4QueryVerifier());
  const { port } = (await server.run()) as { port: number };
  const endpoint = `http://127.0.0.1:${port}`;
  return {
    url: `s3://${ACCESS_KEY}:${SECRET_KEY}@127.0.0.1:${port}/${bucket}?region=us-east-1&forcePathStyle=true&tls=false`,
    endpoint,
    bucket,
    directory: tmp.dir,
    async stop() {
      await server.close();
      tmp.remove();
    },
  };
}
