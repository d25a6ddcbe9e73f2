import { createHash } from 'node:crypto';

/** Stream names: one stream per entity, `<kind>-<id>`. */
export const streams = {
  account: (id: string) => `account-${id}`,
  context: (id: string) => `context-${id}`,
  /** A tenant's teardown (TenantTornDown): the stream exists only once the tenant is torn down. */
  tenant: (id: string) => `tenant-${id}`,
  credential: (id: string) => `credential-${id}`,
  /** The identity providers whose tokens a tenant accepts (JwtIssuersSet). */
  jwtIssuers: (tenantId: string) => `jwt-issuers-${tenantId}`,
  schema: (id: string) => `schema-${id}`,
  record: (id: string) => `record-${id}`,
  folder: (id: string) => `folder-${id}`,
  document: (id: string) => `document-${id}`,
  /** The namespace registry of one tenant (namespaces are tenant-wide). */
  namespaces: (tenantId: string) => `namespaces-${tenantId}`,
  user: (id: string) => `user-${id}`,
  entity: (id: string) => `entity-${id}`,
  /** The versions of one script name in a tenant's context (ScriptVersionPushed / ScriptVersionDeleted). */
  script: (tenantId: string, contextId: string, name: string) =>
    `script-${createHash('sha256').update(`${tenantId}\u0000${contextId}\u0000${name}`).digest('hex').slice(0, 40)}`,
  /** The script names of a tenant's context (ScriptNameAdded, one per name), for listing without a name. */
  scriptNames: (tenantId: string, contextId: string) =>
    `script-names-${createHash('sha256').update(`${tenantId}\u0000${contextId}`).digest('hex').slice(0, 40)}`,
  /**
   * The index outcomes of a context's records (RecordsIndexed), appended by the search projector with expected revision
   * 'any'.
   */
  outcomes: (tenantId: string, contextId: string) =>
    `outcomes-${createHash('sha256').update(`${tenantId}\u0000${contextId}`).digest('hex').slice(0, 40)}`,
  /** Metering of one tenant (UsageMetered, ReadsMetered), appended with expected revision 'any'. */
  usage: (tenantId: string) => `usage-${tenantId}`,
  /** A uniqueness reservation: one stream per reserved value, claimed with expected `no_stream`. */
  reservation: (...parts: string[]) =>
    `reservation-${createHash('sha256').update(parts.join('\u0000')).digest('hex').slice(0, 40)}`,
};
