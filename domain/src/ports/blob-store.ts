import type { Readable } from 'node:stream';

/**
 * Blobs: uploaded files and document text. Files in DATA_DIR by default, an
 * S3-compatible object store when OBJECT_STORE_URL is set. Keys are opaque
 * paths chosen by the caller (e.g. `<tenant>/<context>/<documentId>/file`).
 */
export interface BlobStore {
  /** Streams `body` to `key`; never holds the whole body in memory. Returns the byte count. */
  put(
    key: string,
    body: Readable | Buffer | string,
    opts?: { contentType?: string; maxBytes?: number },
  ): Promise<{ bytes: number }>;
  get(key: string): Promise<Buffer | null>;
  stream(key: string): Promise<Readable | null>;
  delete(key: string): Promise<void>;
  /**
   * Deletes every blob whose key starts with `prefix` (a tenant's `<tenant>/` or a context's
   * `<tenant>/<context>/`, always ending in `/`): teardown. Idempotent; returns how many were deleted.
   */
  deletePrefix(prefix: string): Promise<number>;
  exists(key: string): Promise<boolean>;
}

/**
 * Presigned URLs served by an object store itself (OBJECT_STORE_URL). Absent
 * in the embedded default, where the service serves `/storage/...`.
 */
export interface PresignedBlobUrls {
  /** A single-use PUT of `key`: Content-Type and the required header are part of the signature. */
  upload(o: {
    key: string;
    contentType: string;
    now: Date;
  }): Promise<{ uploadUrl: string; expiresAt: string; requiredHeaderName: string; requiredHeaderValue: string }>;
  download(o: {
    key: string;
    contentType: string | null;
    fileName: string | null;
    now: Date;
  }): Promise<{ downloadUrl: string; expiresAt: string }>;
}
