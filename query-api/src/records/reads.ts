import { type LiveRecord, RECORD_TABLES, type Sql } from '@svc/domain';
import { type CreatedKey, dataScopeArgs, inDataScope, type OwnerFilter, oldestFirstAfter, pageArgs } from '../lists';
import { batchLoads } from '../batch-loads';
import type { ReadCache } from '../read-cache';

export type RecordRow = Omit<LiveRecord, 'exists'> & {
  indexStatus: string | null;
  indexFailure?: { code: string; message: string } | null;
  payloadBytes: number;
  /** The record stream's revision of its last content event (the change stream tells a stale event by it). */
  revision?: number;
};

export type Raw = {
  record_id: string;
  tenant_id: string;
  context_id: string;
  schema_id: string;
  type_name: string;
  schema_version: number;
  payload: Record<string, unknown>;
  full_payload?: Record<string, unknown> | null;
  payload_bytes: number;
  status: string;
  folder_id: string | null;
  user_id: string | null;
  scopes: string[];
  external_id: string | null;
  index_mode: string | null;
  index_status: string | null;
  index_failure?: { code: string; message: string } | null;
  created_by: string | null;
  created_at: Date | string;
  updated_at: Date | string;
  version: number;
  revision?: number | string;
};

export const toRow = (r: Raw): RecordRow => ({
  id: r.record_id,
  tenantId: r.tenant_id,
  contextId: r.context_id,
  schemaId: r.schema_id,
  typeName: r.type_name,
  schemaVersion: r.schema_version,
  payload: r.full_payload ?? r.payload,
  payloadBytes: r.payload_bytes,
  status: r.status,
  folderId: r.folder_id,
  userId: r.user_id,
  scopes: r.scopes,
  externalId: r.external_id,
  indexMode: r.index_mode,
  indexStatus: r.index_status,
  indexFailure: r.index_failure ?? null,
  createdBy: r.created_by,
  createdAt: new Date(r.created_at).toISOString(),
  updatedAt: new Date(r.updated_at).toISOString(),
  version: r.version,
  ...(r.revision !== undefined ? { revision: Number(r.revision) } : {}),
});

export interface RecordFilter extends OwnerFilter {
  type?: string;
  folderId?: string;
}

export class RecordReads {
  /**
   * Reads by id that the cache does not hold: one query for the reads asked for while another runs (batch-loads.ts).
   */
  private readonly load: (id: string) => Promise<RecordRow | null>;

  constructor(
    private readonly sql: Sql,
    private readonly cache?: ReadCache<RecordRow>,
    /** Records created lately, whose rows need no query (beside the projector only, as the cache). */
    private readonly recent?: { row(id: string): RecordRow | undefined },
  ) {
    this.load = batchLoads(async (ids) => new Map((await this.byIds([...ids])).map((r) => [r.id, r])), {
      // The embedded database runs one query at a time; a server's pool runs several.
      concurrency: sql.kind === 'pglite' ? 1 : 4,
    });
  }

  async byId(id: string): Promise<RecordRow | null> {
    const load = () => {
      const row = this.recent?.row(id);
      return row ? Promise.resolve(row) : this.load(id);
    };
    return this.cache ? this.cache.get(id, load) : load();
  }

  /** Rows of these ids (those that exist, in no order): lately created ones as kept, the rest in one query. */
  async rows(ids: string[]): Promise<RecordRow[]> {
    const kept: RecordRow[] = [];
    const rest: string[] = [];
    for (const id of ids) {
      const row = this.recent?.row(id);
      if (row) kept.push(row);
      else rest.push(id);
    }
    return rest.length ? kept.concat(await this.byIds(rest)) : kept;
  }

  async byIds(ids: string[]): Promise<RecordRow[]> {
    const { rows } = await this.sql.query<Raw>(
      `SELECT r.*, p.payload AS full_payload FROM ${RECORD_TABLES.records} r LEFT JOIN ${RECORD_TABLES.payloads} p ` +
        `ON ` +
        `p.record_id = r.record_id WHERE r.record_id = ANY($1::text[])`,
      [ids],
    );
    return rows.map(toRow);
  }

  /** Oldest first by (createdAt, id); filters (including the data scope) apply before the limit. */
  async list(
    tenantId: string,
    contextId: string,
    f: RecordFilter,
    after: CreatedKey | undefined,
    limit: number,
    full = false,
  ): Promise<RecordRow[]> {
    const { rows } = await this.sql.query<Raw>(
      `SELECT r.*${full ? ', p.payload AS full_payload' : ''} FROM ${RECORD_TABLES.records} r ` +
        `${full ? `LEFT JOIN ${RECORD_TABLES.payloads} p ON p.record_id = r.record_id` : ''}
        WHERE ` +
        `tenant_id = $1 AND context_id = $2 AND ($3::text IS NULL OR type_name = $3) AND ($4::text IS NULL ` +
        `OR user_id = $4) AND ($5::text IS NULL OR scopes ? $5::text)
          AND ($6::text IS NULL OR ` +
        `folder_id = $6) AND ${inDataScope(7)} AND ${oldestFirstAfter('r.record_id', 9)}`,
      [
        tenantId,
        contextId,
        f.type ?? null,
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
