import { invalid } from '@svc/contracts';
import { HISTORY_TABLES, type Sql } from '@svc/domain';

export interface VersionRow {
  id: string;
  entityId: string;
  entityKind: string;
  version: number;
  eventType: string;
  recordedAt: string;
  actor: { keyId: string | null; userId: string | null };
  requestId: string | null;
  state: Record<string, unknown> | null;
}

type Raw = {
  row_id: string;
  entity_id: string;
  entity_kind: string;
  version: number;
  event_type: string;
  recorded_at: Date | string;
  actor: VersionRow['actor'];
  request_id: string | null;
  state: VersionRow['state'];
  position: number;
  tenant_id: string;
  context_id: string;
};

/** Version rows and tombstones of every entity kind (one row shape for all). */
export class HistoryReads {
  constructor(private readonly sql: Sql) {}

  /** Oldest first; `startFrom` is the id of the last row seen (plain, not encrypted). */
  async versions(
    tenantId: string,
    contextId: string,
    entityId: string,
    startFrom: string | undefined,
    limit: number,
  ): Promise<{ rows: VersionRow[]; more: boolean }> {
    let after = 0;
    if (startFrom !== undefined) {
      const { rows } = await this.sql.query<{ position: number }>(
        `SELECT position FROM ${HISTORY_TABLES.versions} WHERE row_id = $1 AND entity_id = $2`,
        [startFrom, entityId],
      );
      if (!rows.length) throw invalid('startFrom is not a version row id of this entity');
      after = Number(rows[0].position);
    }
    const { rows } = await this.sql.query<Raw>(
      `SELECT * FROM ${HISTORY_TABLES.versions} WHERE entity_id = $1 AND tenant_id = $2 AND context_id = $3 AND ` +
        `position ` +
        '> $4 ORDER BY position LIMIT $5',
      [entityId, tenantId, contextId, after, limit + 1],
    );
    return {
      more: rows.length > limit,
      rows: rows.slice(0, limit).map((r) => ({
        id: r.row_id,
        entityId: r.entity_id,
        entityKind: r.entity_kind,
        version: r.version,
        eventType: r.event_type,
        recordedAt: new Date(r.recorded_at).toISOString(),
        actor: r.actor,
        requestId: r.request_id,
        state: r.state,
      })),
    };
  }

  /** Ownership of the entity as last recorded (for data-scope checks on history). */
  async lastOwner(
    entityId: string,
  ): Promise<{ tenantId: string; contextId: string; userId: string | null; scopes: string[] } | null> {
    const { rows } = await this.sql.query<Raw>(
      `SELECT tenant_id, context_id, state FROM ${HISTORY_TABLES.versions} WHERE entity_id = $1 AND state IS NOT ` +
        `NULL ` +
        'ORDER BY position DESC LIMIT 1',
      [entityId],
    );
    if (rows[0])
      return {
        tenantId: rows[0].tenant_id,
        contextId: rows[0].context_id,
        userId: (rows[0].state?.userId as string) ?? null,
        scopes: (rows[0].state?.scopes as string[]) ?? [],
      };
    const t = await this.sql.query<{
      tenant_id: string;
      context_id: string;
      owner: { userId: string | null; scopes: string[] };
    }>(`SELECT tenant_id, context_id, owner FROM ${HISTORY_TABLES.tombstones} WHERE entity_id = $1`, [entityId]);
    return t.rows[0] ? { tenantId: t.rows[0].tenant_id, contextId: t.rows[0].context_id, ...t.rows[0].owner } : null;
  }

  async tombstone(entityId: string, kind: string) {
    const { rows } = await this.sql.query<Record<string, any>>(
      `SELECT * FROM ${HISTORY_TABLES.tombstones} WHERE entity_id = $1 AND entity_kind = $2`,
      [entityId, kind],
    );
    const r = rows[0];
    if (!r) return null;
    return {
      tenantId: r.tenant_id as string,
      contextId: r.context_id as string,
      owner: r.owner as { userId: string | null; scopes: string[] },
      body: {
        id: r.entity_id as string,
        entityKind: r.entity_kind as string,
        ...(r.type_name ? { typeName: r.type_name as string } : {}),
        ...(r.external_id ? { externalId: r.external_id as string } : {}),
        deletedAt: new Date(r.deleted_at).toISOString(),
        deletedBy: r.deleted_by as string | null,
        lastVersion: r.last_version as number,
      },
    };
  }
}
