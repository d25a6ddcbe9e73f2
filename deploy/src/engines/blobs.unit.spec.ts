import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { afterAll, describe, expect, it } from 'vitest';
import { BlobTooLargeError, FileBlobStore } from './blobs';

const dir = mkdtempSync(join(tmpdir(), 'svc-blobs-'));
const blobs = new FileBlobStore(dir);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('FileBlobStore', () => {
  it('put (string, buffer, stream) / get / stream / exists / delete', async () => {
    expect(await blobs.put('t/c/a.txt', 'hello')).toEqual({ bytes: 5 });
    expect((await blobs.get('t/c/a.txt'))!.toString()).toBe('hello');
    await blobs.put('t/c/b.bin', Buffer.from([1, 2, 3]));
    expect([...(await blobs.get('t/c/b.bin'))!]).toEqual([1, 2, 3]);
    async function* chunks() {
      for (let i = 0; i < 10; i++) yield Buffer.alloc(1000, i);
    }
    expect(await blobs.put('t/c/s', Readable.from(chunks()))).toEqual({ bytes: 10_000 });
    const s = await blobs.stream('t/c/s');
    let n = 0;
    for await (const c of s!) n += (c as Buffer).length;
    expect(n).toBe(10_000);
    expect(await blobs.exists('t/c/a.txt')).toBe(true);
    await blobs.delete('t/c/a.txt');
    expect(await blobs.exists('t/c/a.txt')).toBe(false);
    expect(await blobs.get('t/c/a.txt')).toBeNull();
    expect(await blobs.stream('t/c/a.txt')).toBeNull();
    await blobs.delete('t/c/never'); // deleting a missing key is not an error
  });

  it('a body over maxBytes stores nothing and leaves no temporary file', async () => {
    await expect(blobs.put('t/c/big', Buffer.alloc(2048), { maxBytes: 1024 })).rejects.toBeInstanceOf(
      BlobTooLargeError,
    );
    expect(await blobs.exists('t/c/big')).toBe(false);
    expect(readdirSync(join(dir, 't/c')).filter((f) => f.startsWith('.tmp-'))).toEqual([]);
  });

  it('keys cannot escape the root', async () => {
    for (const key of ['../x', 'a/../../x', '/abs', 'a//b', ''])
      await expect(blobs.put(key, 'x')).rejects.toThrow(/invalid blob key/);
  });
});
