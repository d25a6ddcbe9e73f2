import type { Readable } from 'node:stream';
import type { BlobStore } from '@svc/domain';

/**
 * The blob store of an execution's document commands: new blobs are written at
 * once (an event may only name a blob that exists), deletes wait for the
 * commit. `settle(true)` runs the deletes after a commit; `settle(false)`
 * removes the blobs this execution wrote, so a failed script changes nothing.
 */
export class StagedBlobStore implements BlobStore {
  private readonly written: string[] = [];
  private readonly deletes: string[] = [];

  constructor(private readonly real: BlobStore) {}

  async put(key: string, body: Readable | Buffer | string, opts?: { contentType?: string; maxBytes?: number }) {
    const out = await this.real.put(key, body, opts);
    this.written.push(key);
    return out;
  }
  get(key: string) {
    return this.deletes.includes(key) ? Promise.resolve(null) : this.real.get(key);
  }
  stream(key: string) {
    return this.deletes.includes(key) ? Promise.resolve(null) : this.real.stream(key);
  }
  async delete(key: string) {
    this.deletes.push(key);
  }
  deletePrefix(): Promise<number> {
    return Promise.resolve(0);
  }
  exists(key: string) {
    return this.deletes.includes(key) ? Promise.resolve(false) : this.real.exists(key);
  }

  async settle(committed: boolean): Promise<void> {
    const keys = committed ? this.deletes : this.written;
    await Promise.all(keys.map((k) => this.real.delete(k).catch(() => undefined)));
  }
}
