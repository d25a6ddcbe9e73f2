import { randomUUID } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, readdir, readFile, rename, rm, stat } from 'node:fs/promises';
import { dirname, join, resolve, sep } from 'node:path';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { BlobStore } from '@svc/domain';

/** A body over `maxBytes`: the partial file is removed and nothing is stored. */
export class BlobTooLargeError extends Error {
  constructor(readonly maxBytes: number) {
    super(`blob exceeds ${maxBytes} bytes`);
    this.name = 'BlobTooLargeError';
  }
}

/**
 * The embedded BlobStore: one file per key under `<DATA_DIR>/blobs`. A put
 * streams to a temporary file beside the target and renames it into place, so
 * a reader never sees a partial blob and a failed put leaves nothing behind.
 * (With OBJECT_STORE_URL set, the S3-compatible adapter in s3-blobs.ts is used instead.)
 */
export class FileBlobStore implements BlobStore {
  private readonly root: string;

  constructor(root: string) {
    this.root = resolve(root);
  }

  private pathOf(key: string): string {
    if (!key || key.includes('\0') || key.split('/').some((p) => p === '' || p === '.' || p === '..'))
      throw new Error(`invalid blob key: ${key}`);
    const p = resolve(this.root, key);
    if (!p.startsWith(this.root + sep)) throw new Error(`invalid blob key: ${key}`);
    return p;
  }

  async put(
    key: string,
    body: Readable | Buffer | string,
    opts: { contentType?: string; maxBytes?: number } = {},
  ): Promise<{ bytes: number }> {
    const target = this.pathOf(key);
    await mkdir(dirname(target), { recursive: true });
    const tmp = join(dirname(target), `.tmp-${randomUUID()}`);
    let bytes = 0;
    const count = new Transform({
      transform(chunk: Buffer, _enc, cb) {
        bytes += chunk.length;
        if (opts.maxBytes !== undefined && bytes > opts.maxBytes) return cb(new BlobTooLargeError(opts.maxBytes));
        cb(null, chunk);
      },
    });
    const source = typeof body === 'string' || Buffer.isBuffer(body) ? Readable.from([Buffer.from(body)]) : body;
    try {
      await pipeline(source, count, createWriteStream(tmp, { flags: 'wx' }));
      await rename(tmp, target);
    } catch (e) {
      await rm(tmp, { force: true });
      throw e;
    }
    return { bytes };
  }

  async get(key: string): Promise<Buffer | null> {
    try {
      return await readFile(this.pathOf(key));
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw e;
    }
  }

  async stream(key: string): Promise<Readable | null> {
    if (!(await this.exists(key))) return null;
    return createReadStream(this.pathOf(key));
  }

  async delete(key: string): Promise<void> {
    await rm(this.pathOf(key), { force: true });
  }

  async deletePrefix(prefix: string): Promise<number> {
    if (!prefix.endsWith('/')) throw new Error(`invalid blob prefix: ${prefix}`);
    const dir = this.pathOf(prefix.slice(0, -1));
    let n = 0;
    const count = async (d: string): Promise<void> => {
      let entries;
      try {
        entries = await readdir(d, { withFileTypes: true });
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code === 'ENOENT') return;
        throw e;
      }
      for (const x of entries) {
        if (x.isDirectory()) await count(join(d, x.name));
        else if (!x.name.startsWith('.tmp-')) n += 1;
      }
    };
    await count(dir);
    await rm(dir, { recursive: true, force: true });
    return n;
  }

  async exists(key: string): Promise<boolean> {
    try {
      return (await stat(this.pathOf(key))).isFile();
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return false;
      throw e;
    }
  }
}
