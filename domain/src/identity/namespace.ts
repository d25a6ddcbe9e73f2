import {
  BUILTIN_NAMESPACES,
  conflict,
  type EventMetadata,
  invalid,
  type NamespaceResponse,
  notFound,
} from '@svc/contracts';
import { assertNever, type Decider, type EventsOf, unexpected } from '../shared/decider';

/**
 * The namespace registry of one tenant: one stream holds every namespace the
 * tenant registered, so "is this name taken" and "which names exist" are
 * decided from one aggregate. `org` and `client` are built in and never stored.
 */
export interface NamespaceEntry {
  name: string;
  description: string | null;
  createdAt: string;
}
export interface NamespaceRegistry {
  entries: Record<string, NamespaceEntry>;
}

export const isBuiltinNamespace = (name: string) => (BUILTIN_NAMESPACES as readonly string[]).includes(name);

/** Registered names, oldest first, then the built-ins (what a schema's targetSurface may name). */
export const namespaceNames = (s: NamespaceRegistry): string[] => [...BUILTIN_NAMESPACES, ...Object.keys(s.entries)];

export type NamespaceEvent = EventsOf<'NamespaceCreated' | 'NamespaceDeleted'>;

export type NamespaceCommand =
  | { type: 'CreateNamespace'; name: string; description?: string }
  /** `entities` counts the namespace's entities in every context of the tenant. */
  | { type: 'DeleteNamespace'; name: string; entities: number };

export const namespaceDecider: Decider<NamespaceRegistry, NamespaceCommand, NamespaceEvent> = {
  initialState: () => ({ entries: {} }),

  decide(cmd, state) {
    switch (cmd.type) {
      case 'CreateNamespace':
        if (isBuiltinNamespace(cmd.name)) throw invalid(`'${cmd.name}' is a built-in namespace`);
        if (state.entries[cmd.name]) throw conflict(`Namespace '${cmd.name}' already exists`);
        return [{ type: 'NamespaceCreated', data: { name: cmd.name, description: cmd.description ?? null } }];
      case 'DeleteNamespace':
        if (isBuiltinNamespace(cmd.name)) throw invalid(`'${cmd.name}' is a built-in namespace and cannot be deleted`);
        if (!state.entries[cmd.name]) throw notFound();
        if (cmd.entities > 0) throw invalid(`Namespace '${cmd.name}' still has entities; delete them first`);
        return [{ type: 'NamespaceDeleted', data: { name: cmd.name } }];
      default:
        return assertNever(cmd);
    }
  },

  evolve(state, e, m?: EventMetadata) {
    switch (e.type) {
      case 'NamespaceCreated':
        return {
          entries: {
            ...state.entries,
            [e.data.name]: { name: e.data.name, description: e.data.description, createdAt: m?.occurredAt ?? '' },
          },
        };
      case 'NamespaceDeleted': {
        const { [e.data.name]: _, ...rest } = state.entries;
        return { entries: rest };
      }
      default:
        return unexpected(e, state);
    }
  },
};

export const namespaceView = (e: NamespaceEntry): NamespaceResponse => ({
  name: e.name,
  ...(e.description !== null ? { description: e.description } : {}),
  createdAt: e.createdAt,
});
