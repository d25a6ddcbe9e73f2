import type { Role } from '../config';

/**
 * What a process of each SERVICE_ROLE runs (docs/operations.md "Roles"). The
 * one place a role is looked at: everything else asks the role's row.
 */
export interface RoleTraits {
  /** The route sets it serves: the write API, the read API (both: role all). */
  serves: ReadonlyArray<'command' | 'query'>;
  /**
   * The log subscribers beside the read models: projection runner, document worker, upload poller, search indexer,
   * webhook dispatcher, trigger runner (and the Kafka feed they read).
   */
  projectors: boolean;
  /**
   * Publishes the log to Kafka: `required` refuses to start without KAFKA_BROKERS, `when-configured` publishes when it
   * is set.
   */
  relay: 'required' | 'when-configured' | false;
  /** Opens the search engines (to serve queries or to index). */
  search: boolean;
  /** Loads the embedding model at start (it serves semantic queries). */
  warmEmbedder: boolean;
  /** Runs the script sandbox (POST /v1/scripts/execute and the trigger runner). */
  scripts: boolean;
  /** Talks to webhook targets (registration checks, deliveries). */
  webhooks: boolean;
  /**
   * Serves reads beside an in-process projector that invalidates its caches
   * exactly: by-id and page caches, and longer lived account views.
   */
  exactCaches: boolean;
}

export const ROLES: Readonly<Record<Role, RoleTraits>> = {
  all: {
    serves: ['command', 'query'],
    projectors: true,
    relay: 'when-configured',
    search: true,
    warmEmbedder: true,
    scripts: true,
    webhooks: true,
    exactCaches: true,
  },
  command: {
    serves: ['command'],
    projectors: false,
    relay: false,
    search: false,
    warmEmbedder: false,
    scripts: true,
    webhooks: true,
    exactCaches: false,
  },
  query: {
    serves: ['query'],
    projectors: false,
    relay: false,
    search: true,
    warmEmbedder: true,
    scripts: false,
    webhooks: false,
    exactCaches: false,
  },
  projector: {
    serves: [],
    projectors: true,
    relay: false,
    search: true,
    warmEmbedder: false,
    scripts: true,
    webhooks: true,
    exactCaches: false,
  },
  relay: {
    serves: [],
    projectors: false,
    relay: 'required',
    search: false,
    warmEmbedder: false,
    scripts: false,
    webhooks: false,
    exactCaches: false,
  },
};

export const servesCommands = (r: RoleTraits) => r.serves.includes('command');
export const servesQueries = (r: RoleTraits) => r.serves.includes('query');
/** Serves the HTTP API (/v1, developer, operator) at all, beyond health and metrics. */
export const servesApi = (r: RoleTraits) => r.serves.length > 0;
