import { DOCUMENT_TABLES, type LiveDocument, type Sql } from '@svc/domain';
import { firstRow } from '../first-row';
import { type CreatedKey, dataScopeArgs, inDataScope, type OwnerFilter, oldestFirstAfter, pageArgs } from '../lists';

export type DocumentRow = Omit<LiveDocument, 'exists'>;

type Raw = Record<string, any>;

const num = (v: unknown) => (v === null || v === undefined ? null : Number(v));
const toRow = (r: Raw): DocumentRow => ({
  id: r.document_id,
  tenantId: r.tenant_id,
  contextId: r.context_id,
  title: r.title,
  source: r.source,
  status: r.status,
  indexFailure: r.index_failure ?? null,
  indexMode: r.index_mode,
  storeText: r.store_text,
  folderId: r.folder_id,
  payload: r.payload,
  schemaId: r.schema_id,
  schemaVersion: r.schema_version,
  typeName: r.type_name,
  userId: r.user_id,
  scopes: r.scopes,
  externalId: r.external_id,
  fileName: r.file_name,
  fileType: r.file_type,
  fileSize: num(r.file_size),
  fileRef: r.file_ref,
  uploadId: r.upload_id,
  textRef: r.text_ref,
  textBytes: num(r.text_bytes),
  textRevision: r.text_revision,
  textRetained: r.text_retained,
  createdAt: new Date(r.created_at).toISOString(),
  lastModified: new Date(r.updated_at).toISOString(),
  version: r.version,
});

export interface DocumentFilter extends OwnerFilter {
  folderId?: string;
}

export class DocumentReads {
  constructor(private readonly sql: Sql) {}

  async byId(id: string): Promise<DocumentRow | null> {
    return firstRow(this.sql, `SELECT * FROM ${DOCUMENT_TABLES.documents} WHERE document_id = $1`, [id], toRow);
  }

  async byIds(ids: string[]): Promise<DocumentRow[]> {
    const { rows } = await this.sql.query<Raw>(
      `SELECT * FROM ${DOCUMENT_TABLES.documents} WHERE document_id = ANY($1::text[])`,
      [ids],
    );
    return rows.map(toRow);
  }

  /** Oldest first by (createdAt, id); filters (including the data scope) apply before the limit. */
  async list(
    tenantId: string,
    contextId: string,
    f: DocumentFilter,
    after: CreatedKey | undefined,
    limit: number,
  ): Promise<DocumentRow[]> {
    const { rows } = await this.sql.query<Raw>(
      `SELECT * FROM ${DOCUMENT_TABLES.documents}
        WHERE tenant_id = $1 AND context_id = $2 AND ($3::text IS NULL ` +
        `OR user_id = $3) AND ($4::text IS NULL OR scopes ? $4::text) AND ($5::text IS NULL OR folder_id = ` +
        `$5)
          AND ${inDataScope(6)} AND ${oldestFirstAfter('document_id', 8)}`,
      [
        tenantId,
        contextId,
        f.userId ?? null,
        f.scope ?? null,
        f.folderId ?? null,
        ...dataScopeArgs(f),
        ...pageArgs(after, limit),
      ],
    );
    return rows.map(toRow);
  }
}
