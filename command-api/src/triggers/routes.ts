import { createTriggerBody, type CreateTrigger, idParam, isServiceError, notFound, type RequestMeta, route, type RouteSpec, triggerResponse } from '@svc/contracts';
import { decideCreateRule, decideDeleteRule, triggerRuleAggregate, triggerRuleView, triggerStreams, type TriggerRule, validateRuleDeclaration } from '@svc/domain';
import { commit, loadAggregate, metadataFor, type CommandDeps } from '../handle-command';
import { loadSchema, type LiveSchema } from '../schemas/routes';
import { scriptVersionByName } from '../scripts/versions';

/**
 * Trigger rules on the write side (docs/triggers.md): POST /v1/triggers and
 * DELETE /v1/triggers/{id}. A rule is its own stream; the same atomic append
 * binds it on its schema's bindings stream, which schema updates and deletes
 * read to refuse what would break a live rule (409).
 */
async function visibleSchema(deps: CommandDeps, meta: RequestMeta, schemaId: string): Promise<LiveSchema | null> {
  try {
    return await loadSchema(deps.store, meta.principal, schemaId);
  } catch (e) {
    if (isServiceError(e) && e.code === 'NOT_FOUND') return null;
    throw e;
  }
}

export async function createTriggerRule(deps: CommandDeps, body: CreateTrigger, meta: RequestMeta): Promise<TriggerRule> {
  const schema = await visibleSchema(deps, meta, body.schemaId);
  const scriptExists = (await scriptVersionByName(deps.store, meta, body.scriptRef.name, body.scriptRef.version)) !== null;
  validateRuleDeclaration(body, { principal: meta.principal, schema, scriptExists });
  const ruleId = deps.ids.newId();
  const typeName = schema!.definition.typeName;
  const events = decideCreateRule(ruleId, body, typeName);
  const md = metadataFor(meta);
  await commit(deps, md, [
    { streamId: triggerStreams.rule(ruleId), events, expectedRevision: 'no_stream' },
    {
      streamId: triggerStreams.bindings(body.schemaId),
      events: [{ type: 'TriggerRuleBound', data: { ruleId, schemaId: body.schemaId, fields: body.fields, enabled: body.enabled ?? true } }],
      expectedRevision: 'any',
    },
  ]);
  return events.reduce((s, e) => triggerRuleAggregate.evolve(s, e, md), triggerRuleAggregate.initialState()) as TriggerRule & { exists: true };
}

export async function deleteTriggerRule(deps: CommandDeps, ruleId: string, meta: RequestMeta): Promise<void> {
  const p = meta.principal;
  const { state, revision } = await loadAggregate(deps.store, triggerStreams.rule(ruleId), triggerRuleAggregate);
  if (!state.exists || state.tenantId !== p.tenantId || state.contextId !== p.contextId) throw notFound();
  await commit(deps, metadataFor(meta), [
    { streamId: triggerStreams.rule(ruleId), events: decideDeleteRule(state), expectedRevision: revision },
    { streamId: triggerStreams.bindings(state.schemaId), events: [{ type: 'TriggerRuleUnbound', data: { ruleId, schemaId: state.schemaId } }], expectedRevision: 'any' },
  ]);
}

export function triggerCommandRoutes(deps: CommandDeps): RouteSpec[] {
  return [
    route({
      method: 'POST',
      url: '/v1/triggers',
      operationId: 'createTrigger',
      auth: 'data',
      permission: 'triggers:c',
      summary: 'Declare a trigger rule: run a script version on record CREATE / UPDATE / DELETE of a schema, with the rule grant',
      body: createTriggerBody,
      response: triggerResponse,
      status: 201,
      errors: [404],
      write: true,
      handler: async ({ body, meta }) => triggerRuleView(await createTriggerRule(deps, body, meta)),
    }),
    route({
      method: 'DELETE',
      url: '/v1/triggers/:id',
      operationId: 'deleteTrigger',
      auth: 'data',
      permission: 'triggers:d',
      summary: 'Delete a trigger rule; it stops firing for events after the delete',
      params: idParam,
      status: 204,
      write: true,
      handler: async ({ params, meta }) => {
        await deleteTriggerRule(deps, params.id, meta);
        return null;
      },
    }),
  ];
}
