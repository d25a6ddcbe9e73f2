import {
  implicitRootFolder,
  type LiveFolder,
  rootFolderId,
  type Sql,
  FOLDER_TABLES,
  TENANCY_TABLES,
} from '@svc/domain';
import { firstRow } from '../first-row';
import { type CreatedKey, dataScopeArgs, inDataScope, type OwnerFilter, oldestFirstAfter, pageArgs } from '../lists';

export type FolderRow = Omit<LiveFolder, 'exists'>;

type Raw = {
  folder_id: string;
  tenant_id: string;
  context_id: string;
  parent_folder_id: string | null;
  name: string;
  description: string | null;
  slug: string;
  depth: number;
  is_protected: boolean;
  user_id: string | null;
  scopes: string[];
  created_at: Date | string;
  updated_at: Date | string;
  version: number;
};

const toRow = (r: Raw): FolderRow => ({
  id: r.folder_id,
  tenantId: r.tenant_id,
  contextId: r.context_id,
  parentFolderId: r.parent_folder_id,
  name: r.name,
  description: r.description,
  slug: r.slug,
  depth: r.depth,
  isProtected: r.is_protected,
  userId: r.user_id,
  scopes: r.scopes,
  createdAt: new Date(r.created_at).toISOString(),
  lastModified: new Date(r.updated_at).toISOString(),
  version: r.version,
});

/** The data scope does not apply to the context root. */
export interface FolderFilter extends OwnerFilter {
  parentFolderId?: string;
}

export class FolderReads {
  constructor(private readonly sql: Sql) {}

  async byId(id: string): Promise<FolderRow | null> {
    return firstRow(this.sql, `SELECT * FROM ${FOLDER_TABLES.folders} WHERE folder_id = $1`, [id], toRow);
  }

  async byIds(ids: string[]): Promise<FolderRow[]> {
    const { rows } = await this.sql.query<Raw>(
      `SELECT * FROM ${FOLDER_TABLES.folders} WHERE folder_id = ANY($1::text[])`,
      [ids],
    );
    return rows.map(toRow);
  }

  /**
   * The context's root while it is not recorded (a context created before roots came with their
   * contexts, until its first folder write): as it will be recorded, from the context's creation.
   * Null when the root is recorded, or the context is not live.
   */
  async implicitRoot(tenantId: string, contextId: string): Promise<FolderRow | null> {
    const { rows } = await this.sql.query<{ created_at: Date | string }>(
      `SELECT c.created_at FROM ${TENANCY_TABLES.contexts} c
        WHERE c.context_id = $1 AND c.tenant_id = $2 AND ` +
        `c.deleted_at IS NULL AND NOT EXISTS (SELECT 1 FROM ${FOLDER_TABLES.folders} f WHERE f.folder_id = $3)`,
      [contextId, tenantId, rootFolderId(tenantId, contextId)],
    );
    if (!rows[0]) return null;
    const { exists: _, ...root } = implicitRootFolder(tenantId, contextId, new Date(rows[0].created_at).toISOString());
    return root;
  }

  /** Oldest first by (createdAt, id); filters (including the data scope) apply before the limit. */
  async list(
    tenantId: string,
    contextId: string,
    f: FolderFilter,
    after: CreatedKey | undefined,
    limit: number,
  ): Promise<FolderRow[]> {
    const { rows } = await this.sql.query<Raw>(
      `SELECT * FROM ${FOLDER_TABLES.folders}
        WHERE tenant_id = $1 AND context_id = $2 AND ($3::text IS NULL OR ` +
        `user_id = $3) AND ($4::text IS NULL OR scopes ? $4::text) AND ($5::text IS NULL OR parent_folder_id ` +
        `= $5)
          AND (is_protected OR (${inDataScope(6)})) AND ${oldestFirstAfter('folder_id', 8)}`,
      [
        tenantId,
        contextId,
        f.userId ?? null,
        f.scope ?? null,
        f.parentFolderId ?? null,
        ...dataScopeArgs(f),
        ...pageArgs(after, limit),
      ],
    );
    return rows.map(toRow);
  }
}
