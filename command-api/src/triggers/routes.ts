import {
  createTriggerBody,
  type CreateTrigger,
  isServiceError,
  type RequestMeta,
  route,
  type RouteSpec,
  scriptVersionOf,
  triggerResponse,
} from '@svc/contracts';
import {
  bindingOf,
  type CommandDeps,
  handleCommand,
  metadataFor,
  type TriggerRule,
  triggerRuleDecider,
  type TriggerRuleEvent,
  triggerRuleView,
  triggerStreams,
} from '@svc/domain';
import { deleteByIdRoute } from '../by-id-routes';
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

export async function createTriggerRule(
  deps: CommandDeps,
  body: CreateTrigger,
  meta: RequestMeta,
): Promise<TriggerRule> {
  const schema = await visibleSchema(deps, meta, body.schemaId);
  // A pinned version must exist now; `latest` needs some live version now (each firing runs the newest then).
  const scriptExists =
    (await scriptVersionByName(deps.store, meta, body.scriptRef.name, scriptVersionOf(body.scriptRef.version))) !==
    null;
  const ruleId = deps.ids.newId();
  const { state } = await handleCommand(deps, {
    streamId: triggerStreams.rule(ruleId),
    aggregate: triggerRuleDecider,
    metadata: metadataFor(meta),
    fresh: true,
    decide: (s) =>
      boundWith(
        triggerRuleDecider.decide(
          { type: 'CreateTriggerRule', ruleId, body, principal: meta.principal, schema, scriptExists },
          s,
        ),
      ),
  });
  return state as TriggerRule & { exists: true };
}

export async function deleteTriggerRule(deps: CommandDeps, ruleId: string, meta: RequestMeta): Promise<void> {
  await handleCommand(deps, {
    streamId: triggerStreams.rule(ruleId),
    aggregate: triggerRuleDecider,
    metadata: metadataFor(meta),
    decide: (s) => boundWith(triggerRuleDecider.decide({ type: 'DeleteTriggerRule', actor: meta.principal }, s)),
  });
}

/** A rule's events, with the binding each puts on its schema's bindings stream in the same append. */
const boundWith = (events: TriggerRuleEvent[]) => ({
  events,
  also: events.map((e) => ({
    streamId: triggerStreams.bindings(e.data.schemaId),
    events: [bindingOf(e)],
    expectedRevision: 'any' as const,
  })),
});

export function triggerCommandRoutes(deps: CommandDeps): RouteSpec[] {
  return [
    route({
      method: 'POST',
      url: '/v1/triggers',
      operationId: 'createTrigger',
      auth: 'data',
      permission: 'triggers:c',
      summary:
        'Declare a trigger rule: run a script version on record CREATE / UPDATE / DELETE of a schema, ' +
        'with the rule grant',
      body: createTriggerBody,
      response: triggerResponse,
      status: 201,
      errors: [404],
      write: true,
      handler: async ({ body, meta }) => triggerRuleView(await createTriggerRule(deps, body, meta)),
    }),
    deleteByIdRoute({
      url: '/v1/triggers/:id',
      operationId: 'deleteTrigger',
      permission: 'triggers:d',
      summary: 'Delete a trigger rule; it stops firing for events after the delete',
      versioned: false,
      remove: (id, _expectedVersion, meta) => deleteTriggerRule(deps, id, meta),
    }),
  ];
}
