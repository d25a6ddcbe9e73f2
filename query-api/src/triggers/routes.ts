import {
  idParam,
  listTriggerFailuresQuery,
  listTriggersQuery,
  notFound,
  type Paginator,
  route,
  type RouteSpec,
  triggerFailureListResponse,
  triggerListResponse,
  triggerResponse,
  type TriggerFailureResponse,
  type TriggerResponse,
} from '@svc/contracts';
import { scriptVersionOfColumn, type Sql, TRIGGER_TABLES } from '@svc/domain';

/**
 * Reads of trigger rules and terminal trigger failures (docs/triggers.md), from
 * the `triggers` read model (projectors/src/triggers/read-model.ts). Both lists
 * are oldest first with the list envelope and encrypted cursors.
 */
const json = <T>(v: unknown): T => (typeof v === 'string' ? JSON.parse(v) : v) as T;

const ruleView = (r: Record<string, any>): TriggerResponse => ({
  id: r.rule_id,
  name: r.name,
  schemaId: r.schema_id,
  typeName: r.type_name,
  events: json(r.events),
  scriptRef: { name: r.script_name, version: scriptVersionOfColumn(r.script_version) },
  fields: json(r.fields),
  grant: json(r.grant_spec),
  enabled: r.enabled,
  createdAt: r.created_at,
});

const failureView = (r: Record<string, any>): TriggerFailureResponse => ({
  id: r.failure_id,
  ruleId: r.rule_id,
  scriptRef: { name: r.script_name, version: scriptVersionOfColumn(r.script_version) },
  recordId: r.record_id,
  event: r.event,
  reason: r.reason,
  message: r.message,
  attempts: Number(r.attempts),
  firstFailedAt: r.first_failed_at,
  lastFailedAt: r.last_failed_at,
});

export function triggerQueryRoutes(sql: Sql, pages: Paginator): RouteSpec[] {
  return [
    route({
      method: 'GET',
      url: '/v1/triggers/:id',
      operationId: 'getTrigger',
      auth: 'data',
      permission: 'triggers:r',
      summary: 'Read a trigger rule',
      params: idParam,
      response: triggerResponse,
      handler: async ({ params, principal: p }) => {
        const { rows } = await sql.query(
          `SELECT * FROM ${TRIGGER_TABLES.rules} WHERE rule_id = $1 AND tenant_id = $2 AND context_id = $3 AND ` +
            'deleted_position IS NULL',
          [params.id, p.tenantId, p.contextId],
        );
        if (!rows.length) throw notFound();
        return ruleView(rows[0] as Record<string, any>);
      },
    }),
    route({
      method: 'GET',
      url: '/v1/triggers',
      operationId: 'listTriggers',
      auth: 'data',
      permission: 'triggers:r',
      summary: 'List the trigger rules of the app context, oldest first (optionally of one schema)',
      query: listTriggersQuery,
      response: triggerListResponse,
      handler: async ({ query, principal: p }) => {
        const scope = `triggers:${p.tenantId}:${p.contextId}`;
        const params = { schemaId: query.schemaId ?? null, limit: query.limit };
        const after = pages.start<number>(scope, params, query.startFrom) ?? 0;
        const { rows } = await sql.query<Record<string, any>>(
          `SELECT * FROM ${TRIGGER_TABLES.rules} WHERE tenant_id = $1 AND context_id = $2 AND deleted_position ` +
            `IS NULL AND created_position > $3 AND ($4::text IS NULL OR schema_id = $4)
           ORDER BY ` +
            `created_position LIMIT $5`,
          [p.tenantId, p.contextId, after, query.schemaId ?? null, query.limit + 1],
        );
        return pages.page(scope, params, rows, query.limit, (r) => Number(r.created_position), ruleView);
      },
    }),
    route({
      method: 'GET',
      url: '/v1/trigger-failures',
      operationId: 'listTriggerFailures',
      auth: 'data',
      permission: 'triggers:r',
      summary: 'Terminal trigger failures of the app context, oldest first (optionally of one rule)',
      query: listTriggerFailuresQuery,
      response: triggerFailureListResponse,
      handler: async ({ query, principal: p }) => {
        const scope = `trigger-failures:${p.tenantId}:${p.contextId}`;
        const params = { ruleId: query.ruleId ?? null, limit: query.limit };
        const after = pages.start<number>(scope, params, query.startFrom) ?? 0;
        const { rows } = await sql.query<Record<string, any>>(
          `SELECT * FROM ${TRIGGER_TABLES.failures} WHERE tenant_id = $1 AND context_id = $2 AND position > $3 ` +
            `AND ($4::text IS NULL OR rule_id = $4)
           ORDER BY position LIMIT $5`,
          [p.tenantId, p.contextId, after, query.ruleId ?? null, query.limit + 1],
        );
        return pages.page(scope, params, rows, query.limit, (r) => Number(r.position), failureView);
      },
    }),
  ];
}
