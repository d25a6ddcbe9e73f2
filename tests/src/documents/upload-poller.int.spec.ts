import { randomUUID } from 'node:crypto';
import { existsSync, renameSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { UploadPoller } from '@svc/command-api';
import { openPglite, PostgresEventStore, S3BlobStore } from '@svc/deploy';
import { documentBlobKeys, type Sql, streams } from '@svc/domain';
import { documentsProjection, ProjectionRunner } from '@svc/projectors';
import { tempDir } from '../support/engines';
import { startObjectStore } from '../support/object-store';
import { eventMetadata } from '../support/events';

/**
 * The upload poller (OBJECT_STORE_URL) against a real S3-compatible store (s3rver). s3rver writes an object's data
 * file before its metadata file, so one HEAD can see a finished PUT without its Content-Type; the poller refused and
 * deleted such uploads, and the document stayed PENDING_UPLOAD for good (a flaky documents-s3 e2e run showed it).
 * A wrong content type seen by two polls in a row is still refused.
 */
const T = 'tenant-1';
const C = 'context-1';

describe('upload poller on an S3-compatible store', () => {
  const cleanup: Array<() => Promise<void> | void> = [];
  afterEach(async () => {
    for (const f of cleanup.splice(0).reverse()) await f();
  });

  async function setup() {
    const tmp = tempDir('svc-upload-poller-');
    const sql: Sql = await openPglite(`${tmp.dir}/pg`);
    const store = await PostgresEventStore.open(sql);
    const runner = new ProjectionRunner('read-models', sql, store, [documentsProjection()]);
    await runner.init();
    runner.start();
    const s3 = await startObjectStore();
    const objects = S3BlobStore.fromUrl(s3.url);
    cleanup.push(
      () => tmp.remove(),
      () => sql.close(),
      () => s3.stop(),
      () => runner.stop(),
    );
    const poller = new UploadPoller({ store, sql, objects, urlTtlMs: 900_000 });
    /** A file document waiting for its upload, as POST /v1/documents/upload leaves it. */
    const pendingDocument = async (fileType: string) => {
      const documentId = randomUUID();
      const uploadId = randomUUID();
      const metadata = eventMetadata({ tenantId: T, contextId: C });
      const data = {
        documentId,
        title: 'T',
        source: 'file',
        indexMode: 'TEXT',
        storeText: false,
        folderId: 'root',
        payload: {},
        schemaId: null,
        schemaVersion: null,
        typeName: null,
        userId: null,
        scopes: [],
        externalId: null,
        fileName: 'a.pdf',
        fileType,
        uploadId,
      };
      await store.appendMulti([
        {
          streamId: streams.document(documentId),
          expectedRevision: 'no_stream',
          events: [{ id: randomUUID(), type: 'DocumentCreated', data, metadata }],
        },
      ]);
      await runner.waitFor(await store.headPosition(), 10_000);
      return { documentId, key: documentBlobKeys.pendingUpload(T, C, documentId, uploadId) };
    };
    const events = (documentId: string) => store.readStream(streams.document(documentId));
    const eventTypes = async (documentId: string) => (await events(documentId)).map((e) => e.type);
    /** s3rver's metadata file of an object (its Content-Type lives there). */
    const metadataFile = (key: string) => {
      const parts = key.split('/');
      return join(s3.directory, s3.bucket, ...parts.slice(0, -1), `${parts.at(-1)}._S3rver_metadata.json`);
    };
    return { poller, objects, pendingDocument, events, eventTypes, metadataFile };
  }

  it('an upload seen half-written (data, no metadata) by one poll is recorded by the next, not refused', async () => {
    const s = await setup();
    const { documentId, key } = await s.pendingDocument('application/pdf');
    const body = Buffer.from('%PDF-1.4 a small file');
    await s.objects.put(key, body, { contentType: 'application/pdf' });
    // The state s3rver's putObject passes through: the data file is there, the metadata file not yet.
    const meta = s.metadataFile(key);
    expect(existsSync(meta)).toBe(true);
    renameSync(meta, `${meta}.later`);
    expect((await s.objects.head(key))?.contentType).not.toBe('application/pdf');
    expect(await s.poller.pollOnce()).toBe(0);
    expect(await s.objects.head(key)).not.toBeNull();
    renameSync(`${meta}.later`, meta);
    expect(await s.poller.pollOnce()).toBe(1);
    const events = await s.events(documentId);
    expect(events.map((e) => e.type)).toEqual(['DocumentCreated', 'DocumentFileUploaded']);
    expect(events[1].data).toMatchObject({ documentId, fileSize: body.length, fileType: 'application/pdf' });
    // The pending key is gone; the recorded file is a copy under its own key.
    expect(await s.objects.head(key)).toBeNull();
    expect((await s.objects.head((events[1].data as { fileRef: string }).fileRef))?.bytes).toBe(body.length);
  });

  it(
    'a wrong content type seen by two polls in a row is refused: the object is deleted and nothing is ' + 'recorded',
    async () => {
      const s = await setup();
      const { documentId, key } = await s.pendingDocument('application/pdf');
      await s.objects.put(key, Buffer.from('plain text, not a PDF'), { contentType: 'text/plain' });
      expect(await s.poller.pollOnce()).toBe(0);
      expect(await s.poller.pollOnce()).toBe(0);
      expect(await s.objects.head(key)).toBeNull();
      expect(await s.eventTypes(documentId)).toEqual(['DocumentCreated']);
      // The grant still stands: a right upload with the same key is then recorded.
      await s.objects.put(key, Buffer.from('%PDF-1.4 the real file'), { contentType: 'application/pdf' });
      expect(await s.poller.pollOnce()).toBe(1);
      expect(await s.eventTypes(documentId)).toEqual(['DocumentCreated', 'DocumentFileUploaded']);
    },
  );
});
