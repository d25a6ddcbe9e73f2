import { createHmac, timingSafeEqual } from 'node:crypto';
import { deriveKey } from '@svc/contracts';

/**
 * Presigned storage grants (spec Authentication 6): a URL on `/storage/...`
 * carries its own grant, an HMAC over the document id, the upload id and the
 * expiry, keyed with deriveKey(secret, 'storage'). The upload PUT must also
 * carry a required header whose value is a second HMAC the client cannot derive
 * from the URL alone. Single use is enforced by the document's state (the
 * upload id must still be pending), not by the grant.
 */
export const UPLOAD_HEADER = 'x-storage-grant';
export const DEFAULT_URL_TTL_MS = 15 * 60 * 1000;

export type GrantCheck = 'ok' | 'bad-signature' | 'expired';

export class StorageGrants {
  constructor(
    private readonly key: Buffer,
    readonly ttlMs: number = DEFAULT_URL_TTL_MS,
  ) {}

  private mac(...parts: string[]): string {
    return createHmac('sha256', this.key).update(parts.join('\n')).digest('base64url');
  }

  private check(expected: string, given: string | undefined, expires: number, now: number): GrantCheck {
    const a = Buffer.from(expected);
    const b = Buffer.from(given ?? '');
    if (a.length !== b.length || !timingSafeEqual(a, b)) return 'bad-signature';
    if (!Number.isFinite(expires) || expires < now) return 'expired';
    return 'ok';
  }

  upload(baseUrl: string, documentId: string, uploadId: string, now: number) {
    const expires = now + this.ttlMs;
    const sig = this.mac('upload', documentId, uploadId, String(expires));
    return {
      uploadUrl:
        `${baseUrl}/storage/uploads/${encodeURIComponent(documentId)}` +
        `?upload=${encodeURIComponent(uploadId)}&expires=${expires}&signature=${sig}`,
      expiresAt: new Date(expires).toISOString(),
      requiredHeaderName: UPLOAD_HEADER,
      requiredHeaderValue: this.headerValue(documentId, uploadId),
    };
  }

  headerValue(documentId: string, uploadId: string): string {
    return this.mac('upload-header', documentId, uploadId);
  }

  checkUpload(
    documentId: string,
    uploadId: string,
    expires: number,
    signature: string | undefined,
    now: number,
  ): GrantCheck {
    return this.check(this.mac('upload', documentId, uploadId, String(expires)), signature, expires, now);
  }

  checkHeader(documentId: string, uploadId: string, value: string | undefined): boolean {
    return this.check(this.headerValue(documentId, uploadId), value, Number.MAX_SAFE_INTEGER, 0) === 'ok';
  }

  /** A download grant names the file blob it serves, so a later re-upload does not reuse it. */
  download(baseUrl: string, documentId: string, fileRef: string, now: number) {
    const expires = now + this.ttlMs;
    const sig = this.mac('download', documentId, fileRef, String(expires));
    return {
      downloadUrl: `${baseUrl}/storage/downloads/${encodeURIComponent(documentId)}?expires=${expires}&signature=${sig}`,
      expiresAt: new Date(expires).toISOString(),
    };
  }

  checkDownload(
    documentId: string,
    fileRef: string,
    expires: number,
    signature: string | undefined,
    now: number,
  ): GrantCheck {
    return this.check(this.mac('download', documentId, fileRef, String(expires)), signature, expires, now);
  }
}

/** Blob keys of a document: one per uploaded file and one per text revision. */
export const documentBlobKeys = {
  file: (tenantId: string, contextId: string, documentId: string, uploadId: string, nonce: string) =>
    `${tenantId}/${contextId}/documents/${documentId}/file-${uploadId}-${nonce}`,
  /** Where a client PUTs through an object-store presigned URL; copied to a `file-` key once the upload is seen. */
  pendingUpload: (tenantId: string, contextId: string, documentId: string, uploadId: string) =>
    `${tenantId}/${contextId}/documents/${documentId}/upload-${uploadId}`,
  text: (tenantId: string, contextId: string, documentId: string, revision: number, nonce: string) =>
    `${tenantId}/${contextId}/documents/${documentId}/text-r${revision}-${nonce}.txt`,
};

/** The absolute base URL of this service as the client reached it. */
export const baseUrlOf = (headers: Record<string, string | string[] | undefined>, protocol: string) => {
  const proto = (typeof headers['x-forwarded-proto'] === 'string' ? headers['x-forwarded-proto'] : protocol) || 'http';
  return `${proto}://${headers.host ?? 'localhost'}`;
};

/** A deployment's presigned storage grants: one key, derived from its secret for this purpose only. */
export const storageGrants = (secret: Buffer, ttlMs = DEFAULT_URL_TTL_MS) =>
  new StorageGrants(deriveKey(secret, 'storage'), ttlMs);
