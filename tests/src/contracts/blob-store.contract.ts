import { randomUUID } from 'node:crypto';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BlobStore } from '@svc/domain';

/**
 * The one contract every BlobStore adapter passes (files under DATA_DIR, an
 * S3-compatible object store). Each adapter's spec file calls it with a factory.
 */
export function blobStoreContract(name: string, open: () => Promise<BlobStore & { dispose?: () => Promise<void> }>) {
  describe(`blob store contract: ${name}`, () => {
    let blobs: BlobStore & { dispose?: () => Promise<void> };
    const P = `t-${randomUUID()}/c-1`;

    beforeAll(async () => {
      blobs = await open();
    });
    afterAll(async () => {
      await blobs?.dispose?.();
    });

    it('puts a string, a Buffer and a stream and reads them back with their byte counts', async () => {
      expect(await blobs.put(`${P}/a.txt`, 'héllo')).toEqual({ bytes: 6 });
      expect((await blobs.get(`${P}/a.txt`))!.toString('utf8')).toBe('héllo');
      expect(
        await blobs.put(`${P}/b.bin`, Buffer.from([0, 1, 2, 255]), { contentType: 'application/octet-stream' }),
      ).toEqual({ bytes: 4 });
      expect([...(await blobs.get(`${P}/b.bin`))!]).toEqual([0, 1, 2, 255]);
      async function* chunks() {
        for (let i = 0; i < 20; i++) yield Buffer.alloc(64 * 1024, i);
      }
      expect(await blobs.put(`${P}/s`, Readable.from(chunks()))).toEqual({ bytes: 20 * 64 * 1024 });
      const s = await blobs.stream(`${P}/s`);
      const got: Buffer[] = [];
      for await (const c of s!) got.push(Buffer.from(c as Buffer));
      const all = Buffer.concat(got);
      expect(all.length).toBe(20 * 64 * 1024);
      expect(all[0]).toBe(0);
      expect(all[all.length - 1]).toBe(19);
    });

    it('streams a body larger than one multipart part', async () => {
      async function* big() {
        for (let i = 0; i < 12; i++) yield Buffer.alloc(1024 * 1024, i);
      }
      expect(await blobs.put(`${P}/big`, Readable.from(big()))).toEqual({ bytes: 12 * 1024 * 1024 });
      const b = await blobs.get(`${P}/big`);
      expect(b!.length).toBe(12 * 1024 * 1024);
      expect(b![11 * 1024 * 1024]).toBe(11);
    });

    it('a put replaces the previous blob of the key', async () => {
      await blobs.put(`${P}/r`, 'first');
      await blobs.put(`${P}/r`, 'second');
      expect((await blobs.get(`${P}/r`))!.toString()).toBe('second');
    });

    it('exists / delete; a missing key reads as null and deleting it is a no-op', async () => {
      await blobs.put(`${P}/d`, 'x');
      expect(await blobs.exists(`${P}/d`)).toBe(true);
      await blobs.delete(`${P}/d`);
      expect(await blobs.exists(`${P}/d`)).toBe(false);
      expect(await blobs.get(`${P}/d`)).toBeNull();
      expect(await blobs.stream(`${P}/d`)).toBeNull();
      await blobs.delete(`${P}/never`);
    });

    it('a body over maxBytes is refused (BlobTooLargeError) and nothing is stored', async () => {
      await expect(blobs.put(`${P}/big2`, Buffer.alloc(2000), { maxBytes: 1000 })).rejects.toMatchObject({
        name: 'BlobTooLargeError',
      });
      expect(await blobs.exists(`${P}/big2`)).toBe(false);
    });

    it('deletePrefix deletes every blob under a tenant or context prefix, and nothing beside it', async () => {
      const T = `t-${randomUUID()}`;
      await blobs.put(`${T}/c1/documents/d1/file-a`, 'a');
      await blobs.put(`${T}/c1/documents/d1/text-r1.txt`, 'b');
      await blobs.put(`${T}/c1/documents/d2/file-b`, 'c');
      await blobs.put(`${T}/c2/documents/d3/file-c`, 'd');
      await blobs.put(`${T}x/c1/documents/d4/file-d`, 'e'); // a sibling whose name starts the same
      expect(await blobs.deletePrefix(`${T}/c1/`)).toBe(3);
      expect(await blobs.exists(`${T}/c1/documents/d1/file-a`)).toBe(false);
      expect(await blobs.exists(`${T}/c1/documents/d2/file-b`)).toBe(false);
      expect(await blobs.exists(`${T}/c2/documents/d3/file-c`)).toBe(true);
      expect(await blobs.deletePrefix(`${T}/c1/`)).toBe(0);
      expect(await blobs.deletePrefix(`${T}/`)).toBe(1);
      expect(await blobs.exists(`${T}/c2/documents/d3/file-c`)).toBe(false);
      expect(await blobs.exists(`${T}x/c1/documents/d4/file-d`)).toBe(true);
      expect(await blobs.deletePrefix(`t-${randomUUID()}/`)).toBe(0);
      for (const bad of [T, '', '/', '../', `${T}/../`]) await expect(blobs.deletePrefix(bad)).rejects.toThrow();
    });

    it('refuses keys that escape their path', async () => {
      for (const k of ['', '../x', `${P}/../../x`, `${P}//x`, '/abs'])
        await expect(blobs.put(k, 'x')).rejects.toThrow();
    });
  });
}
