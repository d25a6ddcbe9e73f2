import { z } from 'zod';
import { folderFields } from '../api/folders';
import { triggerScriptRefView } from '../api/triggers';
import type { SchemaDefinition } from '../api/schemas';

/**
 * The event catalogue: every event type, its payload schema and the metadata
 * every event carries. An event's schema never changes incompatibly once
 * released: add an optional field, or a new type plus an upcaster.
 * Free-form values (record payloads, schema definitions) are `json` fields:
 * objects here, JSON strings in Avro.
 */
export const EVENT_SCHEMA_VERSION = 1;

/** What a metered item counts (docs/api.md "Usage"); each maps to report counters and one credit category. */
export const USAGE_CATEGORIES = [
  'recordWrite',
  'recordIndex',
  'documentWrite',
  'documentIndex',
  'textIngest',
  'fileIngest',
  'searchText',
  'searchSemantic',
  'searchHybrid',
  'scriptExecution',
  'inferenceChat',
  'inferenceRag',
  'inferenceAsk',
] as const;
const usageItem = z.object({
  category: z.enum(USAGE_CATEGORIES),
  /** Operations (writes, ingests, searches, executions, calls). */
  count: z.number().int(),
  /** The category's measure: logical index credits, bytes ingested, execution milliseconds, inference cents. */
  units: z.number().int(),
  /** Exact charge in milli-credits, priced when metered (a later price change never rewrites the past). */
  milli: z.number().int(),
  includedMillis: z.number().int().optional(),
  billableMillis: z.number().int().optional(),
});

export const eventMetadata = z.object({
  tenantId: z.string().nullable(),
  contextId: z.string().nullable(),
  accountId: z.string().nullable(),
  actorKeyId: z.string().nullable(),
  userId: z.string().nullable(),
  requestId: z.string().nullable(),
  occurredAt: z.string(),
  schemaVersion: z.number().int(),
  /**
   * The priced work of the write this event records (record and document writes): the usage projection counts
   * it against the metadata's tenant and context, so a write's charge costs no event of its own.
   */
  charge: z.array(usageItem).optional(),
  /**
   * The same charge written compactly (domain/usage/charges.ts `encodeCharge`): one `<category> <count> <units>
   * <milli>` item per `;`. Writes record it instead of `charge`, whose array of objects made every write's event
   * about a fifth larger for each reader of the log; events written before keep `charge` and count the same.
   */
  chargeCode: z.string().optional(),
  /** Events written by a triggered script: how many trigger firings led to them (docs/triggers.md "Depth limit"). */
  triggerDepth: z.number().int().optional(),
  /**
   * The W3C trace context of the append that wrote the event, when traces are on (docs/operations.md "Traces"):
   * the projectors continue the write's trace from it. Not in the Avro metadata: Kafka carries it as the
   * `traceparent` header, so the metadata's schema fingerprint does not change with tracing.
   */
  traceparent: z.string().optional(),
});
export type EventMetadata = z.infer<typeof eventMetadata>;

const json = z.record(z.string(), z.unknown());
/**
 * A schema definition as the schema commands validated it (`createSchemaBody` and the update rules): still
 * a free-form `json` field on the wire and in Avro (the same zod value, so the same Avro schema and
 * fingerprint), typed so readers of SchemaCreated / SchemaUpdated get the definition without a cast.
 */
const schemaDefinition = json as unknown as z.ZodType<SchemaDefinition, Record<string, unknown>>;
const plan = z.enum(['free', 'starter', 'pro', 'scale', 'enterprise']);
const tenantRef = z.object({ tenantId: z.string(), contextId: z.string() });
const dataScope = z.object({ userId: z.string().optional(), scopes: z.array(z.string()).optional() });
/**
 * A trigger rule's script as the API shows it: a version number, or `latest` (rules declared before `latest` existed
 * hold a number).
 */
const scriptRef = triggerScriptRefView;
/** A record's content and placement, in full on its creation and on every update. */
const recordContent = {
  payload: json,
  status: z.string(),
  folderId: z.string().nullable(),
  userId: z.string().nullable(),
  scopes: z.array(z.string()),
};
/** A document's folder, payload, schema binding and ownership, in full on its creation and on every update. */
const documentContent = {
  folderId: z.string(),
  payload: json,
  schemaId: z.string().nullable(),
  schemaVersion: z.number().int().nullable(),
  typeName: z.string().nullable(),
  userId: z.string().nullable(),
  scopes: z.array(z.string()),
};

/** Why an item failed indexing (spec: the record's and document's indexFailure.code). */
const indexFailureCode = z.enum([
  'SOURCE_UNAVAILABLE',
  'TEXT_INDEX_FAILED',
  'EMBEDDING_FAILED',
  'INDEXING_FAILED',
  'VECTOR_LIMIT_EXCEEDED',
  'INTERNAL',
]);

export const EVENT_TYPES = {
  // accounts and tenancy
  AccountOpened: z.object({
    accountId: z.string(),
    name: z.string().nullable(),
    plan,
    inferenceBalanceCents: z.number(),
    creditLimit: z.number().nullable(),
    rateLimitPerMinute: z.number().int().nullable(),
    entitlements: z.object({ allowGlobalRegion: z.boolean() }),
    tenants: z.object({ live: tenantRef, test: tenantRef }),
  }),
  /**
   * Absent means unchanged; `{ value: null }` clears a limit (optional and nullable never combine: Avro could not tell
   * them apart).
   */
  AccountChanged: z.object({
    accountId: z.string(),
    plan: plan.optional(),
    creditLimit: z.object({ value: z.number().nullable() }).optional(),
    rateLimitPerMinute: z.object({ value: z.number().int().nullable() }).optional(),
    inferenceBalanceCentsDelta: z.number().optional(),
    entitlements: z.object({ allowGlobalRegion: z.boolean() }).optional(),
  }),
  ContextCreated: z.object({
    contextId: z.string(),
    tenantId: z.string(),
    accountId: z.string(),
    name: z.string(),
    isDefault: z.boolean(),
  }),
  ContextDeleted: z.object({ contextId: z.string(), tenantId: z.string() }),
  /**
   * Tenant teardown (DELETE /developer/tenants/{tenantId}), alone on the tenant's stream `tenant-<id>`. Appended
   * atomically with a ContextDeleted for each of `contextIds` (the contexts live at the time); projections drop
   * everything of the tenant, its credentials stop working, the document worker deletes its blobs.
   */
  TenantTornDown: z.object({
    tenantId: z.string(),
    accountId: z.string(),
    environment: z.enum(['live', 'test']),
    contextIds: z.array(z.string()),
  }),
  CredentialIssued: z.object({
    credentialId: z.string(),
    accountId: z.string(),
    kind: z.enum(['root', 'scoped', 'token', 'developer']),
    tenantId: z.string().nullable(),
    environment: z.enum(['live', 'test']).nullable(),
    contextId: z.string().nullable(),
    crossContext: z.boolean(),
    secretHash: z.string(),
    prefix: z.string(),
    allowedActions: z.array(z.string()),
    dataScope: dataScope.nullable(),
    userId: z.string().nullable(),
    expiresAt: z.string().nullable(),
    wireVersionPin: z.string().nullable(),
    /** The credential that minted this one (minted tokens): revoking it revokes this one too. */
    parentCredentialId: z.string().optional(),
  }),
  CredentialRevoked: z.object({ credentialId: z.string() }),
  /**
   * PUT /operator/tenants/{tenantId}/jwt-issuers: the tenant's whole list of identity-provider registrations
   * (replacing the previous one), alone on the stream `jwt-issuers-<tenantId>`; each (issuer, audience) pair is held
   * by a reservation claimed in the same append. `claims` is the mapping with its defaults filled in.
   */
  JwtIssuersSet: z.object({
    tenantId: z.string(),
    accountId: z.string(),
    issuers: z.array(
      z.object({
        issuer: z.string(),
        audience: z.string(),
        jwksUrl: z.string().nullable(),
        claims: z.object({ userId: z.string(), contextId: z.string(), scopes: z.string(), permissions: z.string() }),
        defaultPermissions: z.array(z.string()).nullable(),
      }),
    ),
  }),

  // uniqueness reservations (one stream per reserved value)
  ReservationClaimed: z.object({ key: z.string(), ownerId: z.string() }),
  ReservationReleased: z.object({ key: z.string(), ownerId: z.string() }),

  // schemas
  SchemaCreated: z.object({ schemaId: z.string(), typeName: z.string(), definition: schemaDefinition }),
  SchemaUpdated: z.object({ schemaId: z.string(), schemaVersion: z.number().int(), definition: schemaDefinition }),
  SchemaDeleted: z.object({ schemaId: z.string(), typeName: z.string() }),

  // records
  RecordCreated: z.object({
    recordId: z.string(),
    schemaId: z.string(),
    schemaVersion: z.number().int(),
    typeName: z.string(),
    ...recordContent,
    externalId: z.string().nullable(),
    indexMode: z.string().nullable(),
    /** Keyed HMACs of sensitive values (the values themselves are sealed in `payload`). */
    blindIndex: z.record(z.string(), z.string()).optional(),
  }),
  RecordUpdated: z.object({
    recordId: z.string(),
    schemaVersion: z.number().int(),
    ...recordContent,
    /** `put` or `patch`, for history readers. */
    change: z.enum(['put', 'patch']),
    blindIndex: z.record(z.string(), z.string()).optional(),
  }),
  RecordDeleted: z.object({
    recordId: z.string(),
    typeName: z.string(),
    externalId: z.string().nullable(),
  }),
  /**
   * Index outcomes, appended by the search projector to the record's stream with
   * expected revision 'any'. They never change the record's version; `forRevision`
   * is the stream revision of the content event that was indexed, so a stale
   * outcome is recognisable once the record changed again.
   */
  RecordIndexed: z.object({
    recordId: z.string(),
    status: z.enum(['INDEXED', 'SKIPPED']),
    forRevision: z.number().int(),
  }),
  RecordIndexFailed: z.object({
    recordId: z.string(),
    code: indexFailureCode,
    message: z.string(),
    forRevision: z.number().int(),
  }),
  /**
   * The index outcomes of many records of one context in one event (what the search projector appends since
   * 2026-11-29, instead of one RecordIndexed / RecordIndexFailed per record): to the context's outcome stream
   * (`outcomes-<hash of tenant and context>`), expected revision 'any', at most 500 outcomes an event. An outcome whose
   * record changed again (`forRevision` below the record's current revision) is stale: the read model and webhooks
   * leave it out. The two per-record events above stay readable for logs written before.
   */
  RecordsIndexed: z.object({
    outcomes: z.array(
      z.object({
        recordId: z.string(),
        forRevision: z.number().int(),
        status: z.enum(['INDEXED', 'SKIPPED', 'FAILED']),
        /** FAILED only (null otherwise). */
        code: indexFailureCode.nullable(),
        message: z.string().nullable(),
      }),
    ),
  }),

  // folders (the context root has a derived id, no parent and isProtected: true)
  FolderCreated: z.object({ folderId: z.string(), ...folderFields }),
  /** The mutable fields after the change, in full. */
  FolderUpdated: z.object({
    folderId: z.string(),
    name: z.string(),
    description: z.string().nullable(),
    userId: z.string().nullable(),
    scopes: z.array(z.string()),
    change: z.enum(['put', 'patch']),
  }),
  FolderDeleted: z.object({ folderId: z.string(), parentFolderId: z.string().nullable(), slug: z.string() }),

  // identity: namespaces (one registry stream per tenant), users and entities (per tenant and context)
  NamespaceCreated: z.object({ name: z.string(), description: z.string().nullable() }),
  NamespaceDeleted: z.object({ name: z.string() }),
  UserCreated: z.object({
    userId: z.string(),
    email: z.string().nullable(),
    displayName: z.string().nullable(),
    payload: json,
    schemaId: z.string().nullable(),
    scopes: z.array(z.string()),
  }),
  /** The mutable fields after the change, in full. */
  UserUpdated: z.object({
    userId: z.string(),
    email: z.string().nullable(),
    displayName: z.string().nullable(),
    payload: json,
    scopes: z.array(z.string()),
    change: z.enum(['put', 'patch']),
  }),
  UserDeleted: z.object({ userId: z.string(), email: z.string().nullable() }),
  EntityCreated: z.object({
    entityId: z.string(),
    namespace: z.string(),
    key: z.string(),
    payload: json,
    schemaId: z.string().nullable(),
  }),
  EntityUpdated: z.object({ entityId: z.string(), payload: json, change: z.enum(['put', 'patch']) }),
  EntityDeleted: z.object({ entityId: z.string(), namespace: z.string(), key: z.string() }),

  // documents. The title is kept in the log and the read models only: outbound event data (webhooks) and logs never
  // carry it.
  DocumentCreated: z.object({
    documentId: z.string(),
    title: z.string(),
    /** `text`: inline ingest (the body is always retained); `file`: presigned upload. */
    source: z.enum(['text', 'file']),
    indexMode: z.string(),
    storeText: z.boolean(),
    ...documentContent,
    externalId: z.string().nullable(),
    fileName: z.string().nullable(),
    fileType: z.string().nullable(),
    /** The pending upload grant of a file document (null for text). */
    uploadId: z.string().nullable(),
    blindIndex: z.record(z.string(), z.string()).optional(),
  }),
  /** The mutable fields after the change, in full (text changes follow as DocumentTextReady). */
  DocumentUpdated: z.object({
    documentId: z.string(),
    title: z.string(),
    ...documentContent,
    change: z.enum(['put', 'patch']),
    blindIndex: z.record(z.string(), z.string()).optional(),
  }),
  /** A new upload grant for an existing file document (re-upload). */
  DocumentUploadRequested: z.object({
    documentId: z.string(),
    uploadId: z.string(),
    fileName: z.string(),
    fileType: z.string(),
  }),
  DocumentFileUploaded: z.object({
    documentId: z.string(),
    uploadId: z.string(),
    fileRef: z.string(),
    fileSize: z.number().int(),
    fileType: z.string(),
  }),
  DocumentExtractionStarted: z.object({ documentId: z.string(), uploadId: z.string() }),
  /** Text is available at `textRef` (BlobStore key); the search projector indexes from here. */
  DocumentTextReady: z.object({
    documentId: z.string(),
    textRef: z.string(),
    textBytes: z.number().int(),
    indexMode: z.string(),
    textRevision: z.number().int(),
  }),
  DocumentIndexed: z.object({ documentId: z.string(), status: z.enum(['INDEXED']), textRevision: z.number().int() }),
  /** No index work: STORED (indexMode NONE) or SKIPPED (no indexable text). */
  DocumentIndexSkipped: z.object({
    documentId: z.string(),
    status: z.enum(['STORED', 'SKIPPED']),
    textRevision: z.number().int(),
  }),
  DocumentFailed: z.object({ documentId: z.string(), code: z.string(), message: z.string() }),
  /** storeText: false — the text blob was deleted after indexing. */
  DocumentTextDiscarded: z.object({ documentId: z.string(), textRevision: z.number().int() }),
  DocumentDeleted: z.object({ documentId: z.string(), externalId: z.string().nullable() }),

  // webhooks (docs/webhooks.md): one stream per registration `webhook-<id>`; verified domains one stream per account
  // `webhook-domains-<accountId>`
  /**
   * `sealedSecret`: the signing secret sealed with a key derived from the service secret (never in the clear in the
   * log).
   */
  WebhookRegistered: z.object({
    webhookId: z.string(),
    accountId: z.string(),
    tenantId: z.string(),
    livemode: z.boolean(),
    url: z.string(),
    domain: z.string(),
    events: z.array(z.string()),
    apiVersion: z.string(),
    sealedSecret: z.string(),
    createdAt: z.number(),
  }),
  /**
   * The mutable fields after the change, in full; `resetFailures` when the update set status ACTIVE (the failure count
   * restarts).
   */
  WebhookUpdated: z.object({
    webhookId: z.string(),
    url: z.string(),
    domain: z.string(),
    events: z.array(z.string()),
    apiVersion: z.string(),
    status: z.enum(['ACTIVE', 'DISABLED']),
    disabledReason: z.enum(['consecutive_failures', 'manual', 'ssrf_blocked']).nullable(),
    resetFailures: z.boolean(),
  }),
  /**
   * Appended by the dispatcher (expected revision 'any'): 10 consecutive failures, or a delivery-time address refusal.
   */
  WebhookDisabled: z.object({ webhookId: z.string(), reason: z.enum(['consecutive_failures', 'ssrf_blocked']) }),
  WebhookDeleted: z.object({ webhookId: z.string(), tenantId: z.string() }),
  WebhookDomainAdded: z.object({ accountId: z.string(), domain: z.string(), verificationToken: z.string() }),
  WebhookDomainVerified: z.object({ accountId: z.string(), domain: z.string(), method: z.enum(['operator', 'dns']) }),

  // scripts (docs/scripts.md): one stream per script name of a tenant and context (`script-<hash>`); each version id
  // is claimed by a reservation whose owner is that stream, so a version is found by its id.
  ScriptVersionPushed: z.object({
    scriptId: z.string(),
    name: z.string(),
    version: z.number().int(),
    source: z.string(),
    sourceBytes: z.number().int(),
    declaredInputContract: json.nullable(),
    description: z.string().nullable(),
  }),
  ScriptVersionDeleted: z.object({ scriptId: z.string(), name: z.string(), version: z.number().int() }),
  /**
   * The script names of a tenant's context, one event per name (`script-names-<hash of tenant, context>`), appended
   * with the push that finds its name missing there: GET /v1/scripts without `name` reads the names from it.
   */
  ScriptNameAdded: z.object({ name: z.string() }),

  // trigger rules (docs/triggers.md): a rule's own stream `trigger-<ruleId>`; the live rules of a schema on
  // `trigger-bindings-<schemaId>` (appended in the same commit, read by schema updates and deletes); one marker stream
  // per firing `trigger-firing-<hash>`, claimed with `no_stream` by the firing's outcome (TriggerFired, committed with
  // the script's writes, or TriggerFailed), so a firing happens once.
  TriggerRuleCreated: z.object({
    ruleId: z.string(),
    name: z.string(),
    schemaId: z.string(),
    typeName: z.string(),
    events: z.array(z.enum(['CREATE', 'UPDATE', 'DELETE'])),
    /** `version`: the number, or `latest` (the newest live version, resolved at each firing). */
    scriptRef,
    fields: z.array(z.string()),
    grant: z.object({ allowedActions: z.array(z.string()), dataScope: dataScope.nullable() }),
    enabled: z.boolean(),
  }),
  TriggerRuleDeleted: z.object({ ruleId: z.string(), schemaId: z.string() }),
  TriggerRuleBound: z.object({
    ruleId: z.string(),
    schemaId: z.string(),
    fields: z.array(z.string()),
    enabled: z.boolean(),
  }),
  TriggerRuleUnbound: z.object({ ruleId: z.string(), schemaId: z.string() }),
  TriggerFired: z.object({
    ruleId: z.string(),
    eventId: z.string(),
    recordId: z.string(),
    executionId: z.string(),
    depth: z.number().int(),
  }),
  /**
   * A terminal trigger failure (decisions §4 shape plus the firing's event id); the webhook dispatcher turns it into
   * `trigger.failed`.
   */
  TriggerFailed: z.object({
    failureId: z.string(),
    ruleId: z.string(),
    eventId: z.string(),
    /** The rule's, as declared. */
    scriptRef,
    recordId: z.string(),
    event: z.enum(['CREATE', 'UPDATE', 'DELETE']),
    reason: z.string(),
    message: z.string(),
    attempts: z.number().int(),
    firstFailedAt: z.string(),
    lastFailedAt: z.string(),
  }),

  // metering (one stream per tenant, `usage-<tenantId>`, appended with expected revision 'any'; docs/api.md "Usage")
  /** Priced work of one operation, appended atomically with the write it charges (or after a search is served). */
  UsageMetered: z.object({
    tenantId: z.string(),
    contextId: z.string().nullable(),
    period: z.string(),
    items: z.array(usageItem),
  }),
  /**
   * Read calls and response bytes of a context, tallied in process and appended in batches. Overage is priced
   * by the usage projection in log order against the account's running monthly totals, with the terms carried here.
   */
  ReadsMetered: z.object({
    tenantId: z.string(),
    contextId: z.string().nullable(),
    period: z.string(),
    calls: z.number().int(),
    bytes: z.number().int(),
    terms: z.object({
      includedCalls: z.number().int(),
      callsPerCredit: z.number().int(),
      includedBytes: z.number().int(),
      bytesPerCredit: z.number().int(),
    }),
  }),
} as const;

export type EventType = keyof typeof EVENT_TYPES;
export type EventData<T extends EventType> = z.infer<(typeof EVENT_TYPES)[T]>;

/** A typed event before it is stored. */
export type DomainEvent = { [T in EventType]: { type: T; data: EventData<T> } }[EventType];

export const isEventType = (t: string): t is EventType => Object.prototype.hasOwnProperty.call(EVENT_TYPES, t);

/** Validates one event's data against its schema; throws on a mismatch (a programming error). */
export function parseEventData<T extends EventType>(type: T, data: unknown): EventData<T> {
  return EVENT_TYPES[type].parse(data) as EventData<T>;
}
