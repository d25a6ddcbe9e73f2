import { BUILTIN_NAMESPACES, conflict, type DomainEvent, type EventMetadata, invalid, type NamespaceResponse, notFound } from '@svc/contracts';

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

export const namespaceRegistry = {
  initialState: (): NamespaceRegistry => ({ entries: {} }),
  evolve(state: NamespaceRegistry, e: DomainEvent, m?: EventMetadata): NamespaceRegistry {
    switch (e.type) {
      case 'NamespaceCreated':
        return { entries: { ...state.entries, [e.data.name]: { name: e.data.name, description: e.data.description, createdAt: m?.occurredAt ?? '' } } };
      case 'NamespaceDeleted': {
        const { [e.data.name]: _, ...rest } = state.entries;
        return { entries: rest };
      }
      default:
        return state;
    }
  },
};

/** Registered names, oldest first, then the built-ins (what a schema's targetSurface may name). */
export const namespaceNames = (s: NamespaceRegistry): string[] => [...BUILTIN_NAMESPACES, ...Object.keys(s.entries)];

export function decideCreateNamespace(cmd: { name: string; description?: string }, state: NamespaceRegistry): DomainEvent[] {
  if (isBuiltinNamespace(cmd.name)) throw invalid(`'${cmd.name}' is a built-in namespace`);
  if (state.entries[cmd.name]) throw conflict(`Namespace '${cmd.name}' already exists`);
  return [{ type: 'NamespaceCreated', data: { name: cmd.name, description: cmd.description ?? null } }];
}

/** `entities` counts the namespace's entities in every context of the tenant. */
export function decideDeleteNamespace(name: string, state: NamespaceRegistry, entities: number): DomainEvent[] {
  if (isBuiltinNamespace(name)) throw invalid(`'${name}' is a built-in namespace and cannot be deleted`);
  if (!state.entries[name]) throw notFound();
  if (entities > 0) throw invalid(`Namespace '${name}' still has entities; delete them first`);
  return [{ type: 'NamespaceDeleted', data: { name } }];
}

export const namespaceView = (e: NamespaceEntry): NamespaceResponse => ({ name: e.name, ...(e.description !== null ? { description: e.description } : {}), createdAt: e.createdAt });
