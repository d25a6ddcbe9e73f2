import type { AppendRequest, ScriptRunRequest } from '@svc/domain';

/**
 * What a triggered execution adds to its commit (docs/triggers.md): every event
 * the script wrote carries the firing's depth (`metadata.triggerDepth`, which
 * stops loops), and the firing's marker (`alsoAppend`) commits in the same atomic
 * append, also when the script wrote nothing, so the firing is settled exactly
 * when its writes are. A direct execution (depth 0, nothing to add) is unchanged.
 */
export function withTriggerFiring(
  requests: AppendRequest[],
  req: Pick<ScriptRunRequest, 'depth' | 'alsoAppend'>,
): AppendRequest[] {
  const depth = req.depth ?? 0;
  const stamped =
    depth > 0
      ? requests.map((r) => ({
          ...r,
          events: r.events.map((e) => ({ ...e, metadata: { ...e.metadata, triggerDepth: depth } })),
        }))
      : requests;
  return req.alsoAppend?.length ? [...stamped, ...req.alsoAppend] : stamped;
}
