import { invalid, notFound, type PushScript, type RequestMeta, ServiceError } from '@svc/contracts';
import {
  claim,
  type CommandDeps,
  type EventStore,
  handleCommand,
  loadAggregate,
  MAX_SCRIPT_SOURCE_BYTES,
  metadataFor,
  readReservation,
  resolveScriptVersion,
  scriptDecider,
  scriptIdReservationParts,
  scriptNamesDecider,
  scriptNameSet,
  type ScriptVersion,
  streams,
} from '@svc/domain';

/** Script versions on the write side: push, delete, and the lookups an execution needs (docs/scripts.md). */
export const scriptStreamOf = (meta: RequestMeta, name: string) =>
  streams.script(meta.principal.tenantId!, meta.principal.contextId!, name);

export interface SourceCheck {
  check(source: string): Promise<{ ok: boolean; message?: string }>;
}

export async function pushScript(
  deps: CommandDeps,
  checker: SourceCheck,
  body: PushScript,
  meta: RequestMeta,
): Promise<ScriptVersion> {
  if (Buffer.byteLength(body.source, 'utf8') > MAX_SCRIPT_SOURCE_BYTES)
    throw new ServiceError('PAYLOAD_TOO_LARGE', `The script source is over ${MAX_SCRIPT_SOURCE_BYTES / 1024} KB`);
  if (!/\bexport\s+default\b/.test(body.source))
    throw invalid('The source must be an ES module with an `export default` function');
  const checked = await checker.check(body.source);
  if (!checked.ok) throw invalid(`The source does not compile: ${checked.message ?? 'syntax error'}`);
  const scriptId = deps.ids.newId();
  const streamId = scriptStreamOf(meta, body.name);
  const namesStream = streams.scriptNames(meta.principal.tenantId!, meta.principal.contextId!);
  const { state } = await handleCommand(deps, {
    streamId,
    aggregate: scriptDecider,
    metadata: metadataFor(meta),
    // The version id is found through its reservation, whose owner is the name's stream; the context's names
    // (GET /v1/scripts without `name`) get this name with the push that finds it missing there (its first push).
    prepare: async () => ({
      idReservation: await readReservation(deps.store, ...scriptIdReservationParts(scriptId)),
      names: scriptNameSet(await deps.store.readStream(namesStream)),
    }),
    decide: (s, { idReservation, names }) => ({
      events: scriptDecider.decide(
        {
          type: 'PushScriptVersion',
          scriptId,
          name: body.name,
          source: body.source,
          declaredInputContract: body.declaredInputContract,
          description: body.description,
        },
        s,
      ),
      // 'any': pushes of other names never conflict here; two first pushes of this name conflict on its own stream.
      also: [
        claim(idReservation, streamId),
        {
          streamId: namesStream,
          events: scriptNamesDecider.decide({ type: 'AddScriptName', name: body.name }, names),
          expectedRevision: 'any' as const,
        },
      ],
    }),
  });
  return state.versions[state.versions.length - 1];
}

/** The live version with this id in the caller's tenant and context, or null. */
export async function scriptVersionById(
  store: EventStore,
  meta: RequestMeta,
  id: string,
): Promise<{ version: ScriptVersion; streamId: string } | null> {
  const r = await readReservation(store, ...scriptIdReservationParts(id));
  if (!r.holder) return null;
  const { state } = await loadAggregate(store, r.holder, scriptDecider);
  const v = state.versions.find((x) => x.id === id);
  if (!v || v.tenantId !== meta.principal.tenantId || v.contextId !== meta.principal.contextId) return null;
  return { version: v, streamId: r.holder };
}

export async function deleteScriptVersion(deps: CommandDeps, id: string, meta: RequestMeta): Promise<void> {
  const found = await scriptVersionById(deps.store, meta, id);
  if (!found) throw notFound();
  await handleCommand(deps, {
    streamId: found.streamId,
    aggregate: scriptDecider,
    metadata: metadataFor(meta),
    decide: (s) => ({ events: scriptDecider.decide({ type: 'DeleteScriptVersion', scriptId: id }, s) }),
  });
}

/** A version by name and number (or the latest), or null. */
export async function scriptVersionByName(
  store: EventStore,
  meta: RequestMeta,
  name: string,
  version: number | 'latest',
): Promise<ScriptVersion | null> {
  const { state } = await loadAggregate(store, scriptStreamOf(meta, name), scriptDecider);
  return resolveScriptVersion(state, version);
}
