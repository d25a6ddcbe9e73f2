import {
  scriptVersionColumn,
  scriptVersionOfColumn,
  type SqlQueryable,
  type StoredEvent,
  TRIGGER_INDEXES,
  TRIGGER_TABLES,
} from '@svc/domain';
import { deleteRemovedRows } from '../runtime/removals';
import type { SqlProjection } from '../runtime/runner';

/**
 * Trigger rules (`rm_trigger_rules`) and terminal trigger failures
 * (`rm_trigger_failures`), for GET /v1/triggers, GET /v1/trigger-failures and
 * the trigger runner. A deleted rule keeps its row with `deleted_position`, so
 * the runner can tell which rules were live at any position of the log
 * (created before it, not yet deleted). Inserts are idempotent by id.
 * `script_version` NULL is a rule (and its failures) following `latest`.
 */
export const triggersProjection = (): SqlProjection => ({
  name: 'triggers',
  tables: [TRIGGER_TABLES.rules, TRIGGER_TABLES.failures],
  ddl:
    `
CREATE TABLE IF NOT EXISTS ${TRIGGER_TABLES.rules} (
  rule_id text PRIMARY KEY, tenant_id text NOT NULL, ` +
    `context_id text NOT NULL, account_id text, name text NOT NULL, schema_id text NOT NULL,
  type_name ` +
    `text NOT NULL, events jsonb NOT NULL, script_name text NOT NULL, script_version int, fields jsonb NOT ` +
    `NULL,
  grant_spec jsonb NOT NULL, enabled boolean NOT NULL, created_at text NOT NULL, created_position ` +
    `bigint NOT NULL, deleted_position bigint);
CREATE INDEX IF NOT EXISTS ${TRIGGER_INDEXES.triggerRulesList} ON ` +
    `${TRIGGER_TABLES.rules} (tenant_id, context_id, created_position);
CREATE INDEX IF NOT EXISTS ` +
    `${TRIGGER_INDEXES.triggerRulesSchema} ON ${TRIGGER_TABLES.rules} (schema_id, created_position);
CREATE TABLE IF NOT EXISTS ` +
    `${TRIGGER_TABLES.failures} (
  failure_id text PRIMARY KEY, tenant_id text NOT NULL, context_id text NOT NULL, ` +
    `rule_id text NOT NULL, event_id text NOT NULL,
  script_name text NOT NULL, script_version int, ` +
    `record_id text NOT NULL, event text NOT NULL, reason text NOT NULL, message text NOT NULL,
  attempts ` +
    `int NOT NULL, first_failed_at text NOT NULL, last_failed_at text NOT NULL, position bigint NOT ` +
    `NULL);
CREATE INDEX IF NOT EXISTS ${TRIGGER_INDEXES.triggerFailuresList} ON ${TRIGGER_TABLES.failures} (tenant_id, ` +
    `context_id, position);
ALTER TABLE ${TRIGGER_TABLES.rules} ALTER COLUMN script_version DROP NOT NULL;
ALTER ` +
    `TABLE ${TRIGGER_TABLES.failures} ALTER COLUMN script_version DROP NOT NULL;`,
  async apply(q: SqlQueryable, e: StoredEvent) {
    const m = e.metadata;
    switch (e.type) {
      case 'TriggerRuleCreated': {
        const d = e.data;
        await q.query(
          `INSERT INTO ${TRIGGER_TABLES.rules} (rule_id, tenant_id, context_id, account_id, name, schema_id, ` +
            `type_name, events, script_name, script_version, fields, grant_spec, enabled, created_at, ` +
            `created_position)
           VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13,$14,$15) ON ` +
            `CONFLICT (rule_id) DO NOTHING`,
          [
            d.ruleId,
            m.tenantId,
            m.contextId,
            m.accountId,
            d.name,
            d.schemaId,
            d.typeName,
            JSON.stringify(d.events),
            d.scriptRef.name,
            scriptVersionColumn(d.scriptRef.version),
            JSON.stringify(d.fields),
            JSON.stringify(d.grant),
            d.enabled,
            m.occurredAt,
            e.position,
          ],
        );
        return;
      }
      case 'TriggerRuleDeleted':
        await q.query(
          `UPDATE ${TRIGGER_TABLES.rules} SET deleted_position = $2 WHERE rule_id = $1 AND deleted_position IS NULL`,
          [e.data.ruleId, e.position],
        );
        return;
      case 'TriggerFailed': {
        const d = e.data;
        await q.query(
          `INSERT INTO ${TRIGGER_TABLES.failures} (failure_id, tenant_id, context_id, rule_id, event_id, ` +
            `script_name, script_version, record_id, event, reason, message, attempts, first_failed_at, ` +
            `last_failed_at, position)
           VALUES ` +
            `($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13,$14,$15) ON CONFLICT (failure_id) DO NOTHING`,
          [
            d.failureId,
            m.tenantId,
            m.contextId,
            d.ruleId,
            d.eventId,
            d.scriptRef.name,
            scriptVersionColumn(d.scriptRef.version),
            d.recordId,
            d.event,
            d.reason,
            d.message,
            d.attempts,
            d.firstFailedAt,
            d.lastFailedAt,
            e.position,
          ],
        );
        return;
      }
      case 'ContextDeleted':
      case 'TenantTornDown':
        await deleteRemovedRows(q, e, [TRIGGER_TABLES.rules, TRIGGER_TABLES.failures]);
        return;
      default:
        return;
    }
  },
});

export interface TriggerRuleRow {
  rule_id: string;
  tenant_id: string;
  context_id: string;
  account_id: string | null;
  name: string;
  schema_id: string;
  type_name: string;
  events: string[] | string;
  script_name: string;
  script_version: number | null;
  fields: string[] | string;
  grant_spec: { allowedActions: string[]; dataScope: { userId?: string; scopes?: string[] } | null } | string;
  enabled: boolean;
  created_at: string;
  created_position: number | string;
}

const json = <T>(v: T | string): T => (typeof v === 'string' ? (JSON.parse(v) as T) : v);

/** A row as the domain's rule (the runner and the query side both read it). */
export const ruleOfRow = (r: TriggerRuleRow) => ({
  id: r.rule_id,
  name: r.name,
  schemaId: r.schema_id,
  typeName: r.type_name,
  events: json(r.events) as Array<'CREATE' | 'UPDATE' | 'DELETE'>,
  scriptRef: { name: r.script_name, version: scriptVersionOfColumn(r.script_version) },
  fields: json(r.fields),
  grant: json(r.grant_spec),
  enabled: r.enabled,
  tenantId: r.tenant_id,
  contextId: r.context_id,
  accountId: r.account_id,
  createdAt: r.created_at,
});

/** The enabled rules of a schema live at `position` (created before it, deleted after it or never). */
export async function rulesLiveAt(q: SqlQueryable, schemaId: string, position: number) {
  const { rows } = await q.query<TriggerRuleRow>(
    `SELECT * FROM ${TRIGGER_TABLES.rules} WHERE schema_id = $1 AND enabled AND created_position < $2 AND ` +
      `(deleted_position IS NULL OR deleted_position > $2) ORDER BY created_position`,
    [schemaId, position],
  );
  return rows.map(ruleOfRow);
}

/**
 * The enabled rules' lifetimes in these contexts (one query per batch: the filter before reading any record's stream).
 */
export async function ruleLifetimes(
  q: SqlQueryable,
  contexts: Array<{ tenantId: string; contextId: string }>,
): Promise<Map<string, Array<{ created: number; deleted: number | null }>>> {
  const out = new Map<string, Array<{ created: number; deleted: number | null }>>();
  if (!contexts.length) return out;
  const { rows } = await q.query<{
    tenant_id: string;
    context_id: string;
    created_position: number;
    deleted_position: number | null;
  }>(
    `SELECT r.tenant_id, r.context_id, r.created_position, r.deleted_position FROM ${TRIGGER_TABLES.rules} ` +
      `r
       JOIN unnest($1::text[], $2::text[]) AS c(tenant_id, context_id) ON r.tenant_id = c.tenant_id ` +
      `AND r.context_id = c.context_id
     WHERE r.enabled`,
    [contexts.map((c) => c.tenantId), contexts.map((c) => c.contextId)],
  );
  for (const r of rows) {
    const key = `${r.tenant_id}\u0000${r.context_id}`;
    const list = out.get(key) ?? [];
    list.push({
      created: Number(r.created_position),
      deleted: r.deleted_position === null ? null : Number(r.deleted_position),
    });
    out.set(key, list);
  }
  return out;
}

export async function ruleById(q: SqlQueryable, ruleId: string) {
  const { rows } = await q.query<TriggerRuleRow & { deleted_position: number | null }>(
    `SELECT * FROM ${TRIGGER_TABLES.rules} WHERE rule_id = $1`,
    [ruleId],
  );
  return rows.length
    ? {
        ...ruleOfRow(rows[0]),
        deletedPosition: rows[0].deleted_position === null ? null : Number(rows[0].deleted_position),
      }
    : null;
}
