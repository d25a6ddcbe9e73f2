import { randomUUID } from 'node:crypto';
import {
  documentAggregate,
  documentBlobKeys,
  type EventStore,
  loadAggregate,
  NO_WAIT,
  type Sql,
  streams,
  type WriteCharges,
  DOCUMENT_TABLES,
} from '@svc/domain';
import { recordUpload } from './record-upload';
import { MAX_UPLOAD_BYTES } from './storage';

/** What the poller needs of an object store (the S3 adapter provides it). */
export interface UploadObjectStore {
  head(key: string): Promise<{ bytes: number; contentType?: string } | null>;
  copy(from: string, to: string): Promise<void>;
  delete(key: string): Promise<void>;
}

export interface UploadPollerStats {
  polls: number;
  uploads: number;
  errors: number;
  lastError: string | null;
}

const mediaType = (v: string | null | undefined) => (v ?? '').split(';')[0].trim().toLowerCase();

/**
 * Upload completion when an object store serves the presigned PUT
 * (OBJECT_STORE_URL): the client's PUT never reaches this service, so this
 * poller HEADs the pending-upload key of every `PENDING_UPLOAD` document (read
 * model) each `intervalMs`. The first object it sees is copied server-side to
 * an immutable `file-<uploadId>-<nonce>` key, the pending key is deleted, and
 * `DocumentFileUploaded` is appended at the revision read — the same event the
 * embedded `/storage` route appends, so the worker takes it from there.
 * Later PUTs with the same URL (possible until it expires: S3 has no
 * single-use URLs) land on the pending key again and are never recorded.
 * A document is polled for at most the URL lifetime plus two minutes from
 * when this process first saw its upload pending.
 * An object whose content type or size is wrong is refused (and deleted) only
 * when two polls in a row see the same wrong values: a store that writes an
 * object's data before its metadata (s3rver does) can show a half-written
 * upload to one HEAD.
 */
export class UploadPoller {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private stopped = false;
  private readonly firstSeen = new Map<string, number>();
  /**
   * The mismatch (content type | bytes) the last poll saw per pending upload, refused only when the next poll sees it
   * again.
   */
  private readonly mismatch = new Map<string, string>();
  readonly stats: UploadPollerStats = { polls: 0, uploads: 0, errors: 0, lastError: null };

  constructor(
    private readonly o: {
      store: EventStore;
      sql: Sql;
      objects: UploadObjectStore;
      urlTtlMs: number;
      intervalMs?: number;
      log?: (msg: string) => void;
      now?: () => Date;
      /** Metering: the file ingest is charged with the upload it records. */
      meter?: WriteCharges;
    },
  ) {}

  start(): void {
    this.stopped = false;
    const tick = () => {
      if (this.stopped) return;
      this.running = this.pollOnce()
        .then(() => {})
        .catch((e) => {
          this.stats.errors += 1;
          this.stats.lastError = e instanceof Error ? e.message : String(e);
          this.o.log?.(`upload poller: ${this.stats.lastError}`);
        })
        .finally(() => {
          if (!this.stopped) this.timer = setTimeout(tick, this.o.intervalMs ?? 500);
        });
    };
    tick();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.running;
  }

  /** One pass over the pending uploads; returns how many completed. */
  async pollOnce(): Promise<number> {
    this.stats.polls += 1;
    const now = (this.o.now?.() ?? new Date()).getTime();
    const { rows } = await this.o.sql.query<{
      document_id: string;
      tenant_id: string;
      context_id: string;
      upload_id: string;
    }>(
      `SELECT document_id, tenant_id, context_id, upload_id FROM ${DOCUMENT_TABLES.documents} WHERE status = ` +
        `'PENDING_UPLOAD' AND upload_id IS NOT NULL`,
    );
    const live = new Set<string>();
    let done = 0;
    for (const r of rows) {
      const tag = `${r.document_id}/${r.upload_id}`;
      live.add(tag);
      const seen = this.firstSeen.get(tag) ?? now;
      this.firstSeen.set(tag, seen);
      if (now - seen > this.o.urlTtlMs + 120_000) continue;
      if (
        await this.complete(
          tag,
          r.document_id,
          r.upload_id,
          documentBlobKeys.pendingUpload(r.tenant_id, r.context_id, r.document_id, r.upload_id),
        )
      )
        done += 1;
    }
    for (const tag of this.firstSeen.keys()) if (!live.has(tag)) this.firstSeen.delete(tag);
    for (const tag of this.mismatch.keys()) if (!live.has(tag)) this.mismatch.delete(tag);
    return done;
  }

  private async complete(tag: string, id: string, uploadId: string, pendingKey: string): Promise<boolean> {
    const head = await this.o.objects.head(pendingKey);
    if (!head) {
      this.mismatch.delete(tag);
      return false;
    }
    const { state } = await loadAggregate(this.o.store, streams.document(id), documentAggregate);
    if (!state.exists || state.status !== 'PENDING_UPLOAD' || state.uploadId !== uploadId) {
      await this.o.objects.delete(pendingKey).catch(() => {});
      return false;
    }
    // The store checked the signed Content-Type; this also refuses stores that do not verify signatures, and oversize
    // files.
    if (mediaType(head.contentType) !== mediaType(state.fileType) || head.bytes > MAX_UPLOAD_BYTES) {
      const seen = `${mediaType(head.contentType)}|${head.bytes}`;
      if (this.mismatch.get(tag) !== seen) {
        this.mismatch.set(tag, seen);
        return false;
      }
      this.mismatch.delete(tag);
      this.o.log?.(`upload poller: refused the object uploaded for document ${id} (content type or size)`);
      await this.o.objects.delete(pendingKey).catch(() => {});
      return false;
    }
    this.mismatch.delete(tag);
    const key = documentBlobKeys.file(state.tenantId!, state.contextId!, id, uploadId, randomUUID().slice(0, 8));
    await this.o.objects.copy(pendingKey, key);
    const copied = await this.o.objects.head(key);
    if (!copied) return false;
    let recorded: boolean;
    try {
      // Off the request path: no one waits on the read models (NO_WAIT).
      const deps = {
        store: this.o.store,
        barrier: NO_WAIT,
        ids: { newId: randomUUID },
        log: this.o.log,
        meter: this.o.meter,
      };
      recorded = await recordUpload(deps, {
        documentId: id,
        uploadId,
        fileRef: key,
        fileSize: copied.bytes,
        requestId: randomUUID(),
        now: new Date(this.o.now?.() ?? Date.now()),
      });
    } catch (e) {
      await this.o.objects.delete(key).catch(() => {});
      throw e;
    }
    if (!recorded) {
      await this.o.objects.delete(key).catch(() => {});
      return false;
    }
    await this.o.objects.delete(pendingKey).catch(() => {});
    if (state.fileRef && state.fileRef !== key) await this.o.objects.delete(state.fileRef).catch(() => {});
    this.stats.uploads += 1;
    return true;
  }
}
