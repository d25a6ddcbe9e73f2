import { type DomainEvent, type EventMetadata, notFound } from '@svc/contracts';
import { assertNever, type Decider, type EventsOf, fold, unexpected } from '../shared/decider';

/**
 * The versions of one script name (decisions §4, §7): an immutable version per
 * push, numbered from 1 per name (a deleted version's number is never reused),
 * each with its own id. One stream per name, `streams.script(...)`.
 */
export interface ScriptVersion {
  id: string;
  name: string;
  version: number;
  source: string;
  sourceBytes: number;
  declaredInputContract: Record<string, unknown> | null;
  description: string | null;
  createdAt: string;
  tenantId: string | null;
  contextId: string | null;
}

export interface ScriptState {
  /** Live versions, oldest first. */
  versions: ScriptVersion[];
  /** The highest version number ever pushed (0: none). */
  lastVersion: number;
}

export const MAX_SCRIPT_SOURCE_BYTES = 256 * 1024;

export type ScriptEvent = EventsOf<'ScriptVersionPushed' | 'ScriptVersionDeleted'>;
export const isScriptEvent = (e: DomainEvent): e is ScriptEvent =>
  e.type === 'ScriptVersionPushed' || e.type === 'ScriptVersionDeleted';

export type ScriptCommand =
  /** A push always adds the next version number (size and syntax are checked before: they need no state). */
  | {
      type: 'PushScriptVersion';
      scriptId: string;
      name: string;
      source: string;
      declaredInputContract?: Record<string, unknown> | null;
      description?: string | null;
    }
  /** Deleting a version that is not live (never pushed, or deleted already) is a 404. */
  | { type: 'DeleteScriptVersion'; scriptId: string };

export const scriptDecider: Decider<ScriptState, ScriptCommand, ScriptEvent> = {
  initialState: () => ({ versions: [], lastVersion: 0 }),

  decide(cmd, state) {
    switch (cmd.type) {
      case 'PushScriptVersion':
        return [
          {
            type: 'ScriptVersionPushed',
            data: {
              scriptId: cmd.scriptId,
              name: cmd.name,
              version: state.lastVersion + 1,
              source: cmd.source,
              sourceBytes: Buffer.byteLength(cmd.source, 'utf8'),
              declaredInputContract: cmd.declaredInputContract ?? null,
              description: cmd.description ?? null,
            },
          },
        ];
      case 'DeleteScriptVersion': {
        const v = state.versions.find((x) => x.id === cmd.scriptId);
        if (!v) throw notFound();
        return [{ type: 'ScriptVersionDeleted', data: { scriptId: cmd.scriptId, name: v.name, version: v.version } }];
      }
      default:
        return assertNever(cmd);
    }
  },

  /** `metadata` gives a version its tenant, context and creation time. */
  evolve(state, e, m?: EventMetadata) {
    switch (e.type) {
      case 'ScriptVersionPushed': {
        const d = e.data;
        const v: ScriptVersion = {
          id: d.scriptId,
          name: d.name,
          version: d.version,
          source: d.source,
          sourceBytes: d.sourceBytes,
          declaredInputContract: d.declaredInputContract,
          description: d.description,
          createdAt: m?.occurredAt ?? '',
          tenantId: m?.tenantId ?? null,
          contextId: m?.contextId ?? null,
        };
        return { versions: [...state.versions, v], lastVersion: Math.max(state.lastVersion, d.version) };
      }
      case 'ScriptVersionDeleted':
        return { ...state, versions: state.versions.filter((v) => v.id !== e.data.scriptId) };
      default:
        return unexpected(e, state);
    }
  },
};

/** `latest` or a version number, as POST /v1/scripts/execute names it; null when there is no such live version. */
export function resolveScriptVersion(state: ScriptState, version: number | 'latest'): ScriptVersion | null {
  if (version === 'latest') return state.versions[state.versions.length - 1] ?? null;
  return state.versions.find((v) => v.version === version) ?? null;
}

/** The response shape of a version; `source` only for a caller holding `scripts:r`. */
export function scriptView(v: ScriptVersion, withSource: boolean) {
  return {
    id: v.id,
    name: v.name,
    version: v.version,
    createdAt: v.createdAt,
    sourceBytes: v.sourceBytes,
    declaredInputContract: v.declaredInputContract,
    description: v.description,
    ...(withSource ? { source: v.source } : {}),
  };
}

/** The names a context's script-names stream holds (ScriptNameAdded): scriptNamesDecider's state. */
export const scriptNameSet = (events: DomainEvent[]): ReadonlySet<string> =>
  fold(
    scriptNamesDecider,
    events.filter((e): e is EventsOf<'ScriptNameAdded'> => e.type === 'ScriptNameAdded'),
  );

/** The names a context's script-names stream holds, each once, in name order. */
export const scriptNamesOf = (events: DomainEvent[]): string[] => [...scriptNameSet(events)].sort();

/**
 * A context's script names (GET /v1/scripts without `name` lists them): a name is added by the first push of a
 * version under it, once; deleting versions does not remove it from this stream.
 */
export const scriptNamesDecider: Decider<
  ReadonlySet<string>,
  { type: 'AddScriptName'; name: string },
  EventsOf<'ScriptNameAdded'>
> = {
  initialState: () => new Set<string>(),
  decide: (c, names) => (names.has(c.name) ? [] : [{ type: 'ScriptNameAdded', data: { name: c.name } }]),
  evolve: (names, e) => new Set([...names, e.data.name]),
};

/** The reservation parts that map a version id to its name's stream (ReservationClaimed.ownerId = the stream id). */
export const scriptIdReservationParts = (scriptId: string): string[] => ['script-id', scriptId];
