import { describe, expect, it } from 'vitest';
import { eventCodec, metadataCodec, avroCatalogue } from './avro';
import { EVENT_TYPES, eventMetadata, type EventData, type EventMetadata, type EventType } from './catalogue';
import type { SchemaDefinition } from '../api/schemas';

const ACCOUNT = '0b5d3c2e-8a51-4a8e-9f0e-1d2c3b4a5f60';
const LIVE_TENANT = '6f1e2d3c-4b5a-4968-8776-a5b4c3d2e1f0';
const TEST_TENANT = '7a2b3c4d-5e6f-4a0b-9c1d-2e3f4a5b6c7d';
const LIVE_CTX = '11111111-2222-4333-8444-555555555555';
const TEST_CTX = '66666666-7777-4888-9999-aaaaaaaaaaaa';
const USER = '9e8d7c6b-5a49-4837-a625-1403f2e1d0c9';

/** A nested free-form payload: objects, arrays, nulls, booleans, numbers, unicode. */
const richPayload = {
  title: 'Invoice #42 — Zürich',
  amount: 1234.5,
  quantity: 3,
  paid: false,
  notes: null,
  tags: ['urgent', 'q3'],
  lines: [
    { sku: 'A-1', qty: 2, price: 10.25, meta: { color: 'red', sizes: [1, 2, 3] } },
    { sku: 'B-2', qty: 1, price: 0.001, meta: {} },
  ],
  nested: { deeper: { deepest: { flag: true, list: [[1, 2], [], [{ x: null }]] } } },
  big: '92233720368547758070',
  emoji: '✓ ok 🚀',
};

const schemaDefinition = {
  typeName: 'invoice',
  displayName: 'Invoice — Zürich',
  allowedSurfaces: ['record', 'document'],
  fields: [
    { fieldId: 'title', fieldType: 'string', required: true },
    { fieldId: 'amount', fieldType: 'number', sensitive: false, validation: { min: 0 } },
    { fieldId: 'status', fieldType: 'enum', enumValues: ['open', 1, true] },
  ],
  lookupFields: ['title', { fieldName: 'amount', rangeEnabled: true }],
  renderHints: { title: { label: 'Title' } },
  capabilities: { auditHistory: false },
} satisfies SchemaDefinition;

/** Hand-written samples: for each type, optional fields absent in one and present in another. */
const SAMPLES: { [T in EventType]: EventData<T>[] } = {
  AccountOpened: [
    {
      accountId: ACCOUNT,
      name: 'Acme Ltd',
      plan: 'pro',
      inferenceBalanceCents: 2500,
      creditLimit: 100000,
      rateLimitPerMinute: 600,
      entitlements: { allowGlobalRegion: true },
      tenants: {
        live: { tenantId: LIVE_TENANT, contextId: LIVE_CTX },
        test: { tenantId: TEST_TENANT, contextId: TEST_CTX },
      },
    },
    {
      accountId: ACCOUNT,
      name: null,
      plan: 'free',
      inferenceBalanceCents: 0,
      creditLimit: null,
      rateLimitPerMinute: null,
      entitlements: { allowGlobalRegion: false },
      tenants: {
        live: { tenantId: LIVE_TENANT, contextId: LIVE_CTX },
        test: { tenantId: TEST_TENANT, contextId: TEST_CTX },
      },
    },
  ],
  AccountChanged: [
    // only the account id: every optional field absent
    { accountId: ACCOUNT },
    // a plan change alone: creditLimit / rateLimitPerMinute absent means "unchanged"
    { accountId: ACCOUNT, plan: 'scale' },
    // a top-up alone
    { accountId: ACCOUNT, inferenceBalanceCentsDelta: 1500 },
    // nullable fields present as null: "remove the limit"
    { accountId: ACCOUNT, creditLimit: { value: null }, rateLimitPerMinute: { value: null } },
    // everything present
    {
      accountId: ACCOUNT,
      plan: 'enterprise',
      creditLimit: { value: 500000 },
      rateLimitPerMinute: { value: 12000 },
      inferenceBalanceCentsDelta: 99.5,
      entitlements: { allowGlobalRegion: true },
    },
  ],
  ContextCreated: [
    { contextId: LIVE_CTX, tenantId: LIVE_TENANT, accountId: ACCOUNT, name: 'default', isDefault: true },
    { contextId: TEST_CTX, tenantId: LIVE_TENANT, accountId: ACCOUNT, name: 'staging — eu', isDefault: false },
  ],
  ContextDeleted: [{ contextId: TEST_CTX, tenantId: LIVE_TENANT }],
  TenantTornDown: [
    { tenantId: TEST_TENANT, accountId: ACCOUNT, environment: 'test', contextIds: [TEST_CTX] },
    { tenantId: LIVE_TENANT, accountId: ACCOUNT, environment: 'live', contextIds: [] },
  ],
  CredentialIssued: [
    {
      credentialId: 'c0c0c0c0-1111-4222-8333-444444444444',
      accountId: ACCOUNT,
      kind: 'root',
      tenantId: LIVE_TENANT,
      environment: 'live',
      contextId: null,
      crossContext: true,
      secretHash: 'a'.repeat(64),
      prefix: 'sk_live_',
      allowedActions: ['*'],
      dataScope: null,
      userId: null,
      expiresAt: null,
      wireVersionPin: '2026-08-01',
    },
    {
      credentialId: 'c1c1c1c1-1111-4222-8333-444444444444',
      accountId: ACCOUNT,
      kind: 'developer',
      tenantId: null,
      environment: null,
      contextId: null,
      crossContext: false,
      secretHash: 'b'.repeat(64),
      prefix: 'dt_',
      allowedActions: [],
      dataScope: null,
      userId: null,
      expiresAt: null,
      wireVersionPin: null,
    },
    {
      credentialId: 'c2c2c2c2-1111-4222-8333-444444444444',
      accountId: ACCOUNT,
      kind: 'token',
      tenantId: TEST_TENANT,
      environment: 'test',
      contextId: TEST_CTX,
      crossContext: false,
      secretHash: 'c'.repeat(64),
      prefix: 'st_',
      allowedActions: ['records:r', 'scripts:x:nightly_job'],
      dataScope: { userId: USER, scopes: ['org:acme', 'client:42'] },
      userId: USER,
      expiresAt: '2026-08-01T12:00:00.000Z',
      wireVersionPin: '2026-08-01',
    },
    {
      credentialId: 'c3c3c3c3-1111-4222-8333-444444444444',
      accountId: ACCOUNT,
      kind: 'scoped',
      tenantId: LIVE_TENANT,
      environment: 'live',
      contextId: LIVE_CTX,
      crossContext: false,
      secretHash: 'd'.repeat(64),
      prefix: 'ssk_',
      allowedActions: ['records:*'],
      // dataScope present with its optional fields partly absent
      dataScope: { scopes: ['org:acme'] },
      userId: null,
      expiresAt: null,
      wireVersionPin: '2026-08-01',
    },
    {
      credentialId: 'c4c4c4c4-1111-4222-8333-444444444444',
      accountId: ACCOUNT,
      kind: 'scoped',
      tenantId: LIVE_TENANT,
      environment: 'live',
      contextId: LIVE_CTX,
      crossContext: true,
      secretHash: 'e'.repeat(64),
      prefix: 'ssk_',
      allowedActions: ['search:r'],
      // dataScope present but empty
      dataScope: {},
      userId: null,
      expiresAt: null,
      wireVersionPin: '2026-08-01',
    },
  ],
  CredentialRevoked: [{ credentialId: 'c2c2c2c2-1111-4222-8333-444444444444' }],
  JwtIssuersSet: [
    { tenantId: LIVE_TENANT, accountId: ACCOUNT, issuers: [] },
    {
      tenantId: LIVE_TENANT,
      accountId: ACCOUNT,
      issuers: [
        {
          issuer: 'https://login.example.com/',
          audience: 'app',
          jwksUrl: null,
          claims: { userId: 'sub', contextId: 'svc_context', scopes: 'svc_scopes', permissions: 'svc_permissions' },
          defaultPermissions: null,
        },
        {
          issuer: 'https://id.example.org',
          audience: 'api://x',
          jwksUrl: 'https://id.example.org/keys',
          claims: { userId: 'email', contextId: 'ctx', scopes: 'https://app.example/scopes', permissions: 'scope' },
          defaultPermissions: ['records:r'],
        },
      ],
    },
  ],
  ReservationClaimed: [
    { key: `schema-type:${LIVE_TENANT}:${LIVE_CTX}:invoice`, ownerId: 'aaaaaaaa-1111-4222-8333-444444444444' },
  ],
  ReservationReleased: [
    { key: `schema-type:${LIVE_TENANT}:${LIVE_CTX}:invoice`, ownerId: 'aaaaaaaa-1111-4222-8333-444444444444' },
  ],
  SchemaCreated: [
    { schemaId: 'aaaaaaaa-1111-4222-8333-444444444444', typeName: 'invoice', definition: schemaDefinition },
    {
      schemaId: 'aaaaaaaa-1111-4222-8333-444444444445',
      typeName: 'empty',
      definition: { typeName: 'empty', displayName: 'Empty', allowedSurfaces: ['user'] },
    },
  ],
  SchemaUpdated: [
    {
      schemaId: 'aaaaaaaa-1111-4222-8333-444444444444',
      schemaVersion: 2,
      definition: { ...schemaDefinition, fields: [...schemaDefinition.fields, { fieldId: 'due', fieldType: 'date' }] },
    },
  ],
  SchemaDeleted: [{ schemaId: 'aaaaaaaa-1111-4222-8333-444444444444', typeName: 'invoice' }],
  RecordCreated: [
    {
      recordId: 'bbbbbbbb-1111-4222-8333-444444444444',
      schemaId: 'aaaaaaaa-1111-4222-8333-444444444444',
      schemaVersion: 1,
      typeName: 'invoice',
      payload: richPayload,
      status: 'active',
      folderId: 'cccccccc-1111-4222-8333-444444444444',
      userId: USER,
      scopes: ['org:acme', 'client:42'],
      externalId: 'INV-42',
      indexMode: 'full',
    },
    {
      recordId: 'bbbbbbbb-1111-4222-8333-444444444445',
      schemaId: 'aaaaaaaa-1111-4222-8333-444444444444',
      schemaVersion: 3,
      typeName: 'invoice',
      payload: {},
      status: 'draft',
      folderId: null,
      userId: null,
      scopes: [],
      externalId: null,
      indexMode: null,
    },
  ],
  RecordUpdated: [
    {
      recordId: 'bbbbbbbb-1111-4222-8333-444444444444',
      schemaVersion: 1,
      payload: { ...richPayload, paid: true, notes: 'paid by wire' },
      status: 'active',
      folderId: null,
      userId: USER,
      scopes: ['org:acme'],
      change: 'patch',
    },
    {
      recordId: 'bbbbbbbb-1111-4222-8333-444444444444',
      schemaVersion: 2,
      payload: { title: 'replaced' },
      status: 'archived',
      folderId: 'cccccccc-1111-4222-8333-444444444444',
      userId: null,
      scopes: [],
      change: 'put',
    },
  ],
  RecordDeleted: [
    { recordId: 'bbbbbbbb-1111-4222-8333-444444444444', typeName: 'invoice', externalId: 'INV-42' },
    { recordId: 'bbbbbbbb-1111-4222-8333-444444444445', typeName: 'invoice', externalId: null },
  ],
  RecordIndexed: [
    { recordId: 'bbbbbbbb-1111-4222-8333-444444444444', status: 'INDEXED', forRevision: 0 },
    { recordId: 'bbbbbbbb-1111-4222-8333-444444444445', status: 'SKIPPED', forRevision: 7 },
  ],
  RecordIndexFailed: [
    {
      recordId: 'bbbbbbbb-1111-4222-8333-444444444444',
      code: 'EMBEDDING_FAILED',
      message: 'embeddings endpoint answered 500',
      forRevision: 3,
    },
    {
      recordId: 'bbbbbbbb-1111-4222-8333-444444444445',
      code: 'VECTOR_LIMIT_EXCEEDED',
      message: 'Per-tenant vector capacity reached — 5,000,000',
      forRevision: 12,
    },
  ],
  RecordsIndexed: [
    {
      outcomes: [
        {
          recordId: 'bbbbbbbb-1111-4222-8333-444444444444',
          forRevision: 0,
          status: 'INDEXED',
          code: null,
          message: null,
        },
        {
          recordId: 'bbbbbbbb-1111-4222-8333-444444444445',
          forRevision: 7,
          status: 'SKIPPED',
          code: null,
          message: null,
        },
        {
          recordId: 'bbbbbbbb-1111-4222-8333-444444444446',
          forRevision: 3,
          status: 'FAILED',
          code: 'EMBEDDING_FAILED',
          message: 'embeddings endpoint answered 500 — «retry»',
        },
      ],
    },
    { outcomes: [] },
  ],
  FolderCreated: [
    // a context root: no parent, protected, unowned
    {
      folderId: 'dddddddd-1111-8222-8333-444444444444',
      name: 'Root',
      description: null,
      parentFolderId: null,
      slug: 'root',
      depth: 0,
      isProtected: true,
      userId: null,
      scopes: [],
    },
    {
      folderId: 'dddddddd-1111-4222-8333-444444444445',
      name: 'Invoices — Zürich 🚀',
      description: 'Q3 invoices',
      parentFolderId: 'dddddddd-1111-8222-8333-444444444444',
      slug: 'invoices-zurich',
      depth: 1,
      isProtected: false,
      userId: USER,
      scopes: ['org:acme', 'client:42'],
    },
  ],
  FolderUpdated: [
    {
      folderId: 'dddddddd-1111-4222-8333-444444444445',
      name: 'Invoices',
      description: null,
      userId: null,
      scopes: [],
      change: 'put',
    },
    {
      folderId: 'dddddddd-1111-4222-8333-444444444445',
      name: 'Invoices 2026',
      description: 'renamed',
      userId: USER,
      scopes: ['org:acme'],
      change: 'patch',
    },
  ],
  FolderDeleted: [
    {
      folderId: 'dddddddd-1111-4222-8333-444444444445',
      parentFolderId: 'dddddddd-1111-8222-8333-444444444444',
      slug: 'invoices-zurich',
    },
    { folderId: 'dddddddd-1111-4222-8333-444444444446', parentFolderId: null, slug: 'root' },
  ],
  NamespaceCreated: [
    { name: 'team', description: 'Teams of the org' },
    { name: 'region_eu-1', description: null },
  ],
  NamespaceDeleted: [{ name: 'team' }],
  UserCreated: [
    {
      userId: USER,
      email: 'ada@example.com',
      displayName: 'Ada Lovelace',
      payload: richPayload,
      schemaId: 'aaaaaaaa-1111-4222-8333-444444444444',
      scopes: ['org:acme', 'client:42'],
    },
    {
      userId: 'eeeeeeee-1111-4222-8333-444444444444',
      email: null,
      displayName: null,
      payload: {},
      schemaId: null,
      scopes: [],
    },
    {
      userId: 'eeeeeeee-1111-4222-8333-444444444445',
      email: null,
      displayName: 'Empty payload',
      payload: {},
      schemaId: null,
      scopes: ['org:acme'],
    },
  ],
  UserUpdated: [
    {
      userId: USER,
      email: 'ada@example.org',
      displayName: 'Ada',
      payload: { level: 3 },
      scopes: ['org:acme'],
      change: 'patch',
    },
    { userId: USER, email: null, displayName: null, payload: {}, scopes: [], change: 'put' },
  ],
  UserDeleted: [
    { userId: USER, email: 'ada@example.org' },
    { userId: 'eeeeeeee-1111-4222-8333-444444444444', email: null },
  ],
  EntityCreated: [
    {
      entityId: 'ffffffff-1111-4222-8333-444444444444',
      namespace: 'org',
      key: 'acme',
      payload: richPayload,
      schemaId: 'aaaaaaaa-1111-4222-8333-444444444444',
    },
    {
      entityId: 'ffffffff-1111-4222-8333-444444444445',
      namespace: 'team',
      key: 'blue/42',
      payload: {},
      schemaId: null,
    },
  ],
  EntityUpdated: [
    { entityId: 'ffffffff-1111-4222-8333-444444444444', payload: { name: 'Acme Ltd' }, change: 'put' },
    { entityId: 'ffffffff-1111-4222-8333-444444444445', payload: {}, change: 'patch' },
  ],
  EntityDeleted: [{ entityId: 'ffffffff-1111-4222-8333-444444444444', namespace: 'org', key: 'acme' }],
  DocumentCreated: [
    {
      documentId: 'd0c0d0c0-1111-4222-8333-444444444444',
      title: 'Quarterly report — Zürich',
      source: 'text',
      indexMode: 'HYBRID',
      storeText: true,
      folderId: 'f0f0f0f0-1111-4222-8333-444444444444',
      payload: richPayload,
      schemaId: null,
      schemaVersion: null,
      typeName: null,
      userId: null,
      scopes: [],
      externalId: null,
      fileName: null,
      fileType: null,
      uploadId: null,
    },
    {
      documentId: 'd0c0d0c0-1111-4222-8333-444444444444',
      title: 'scan.pdf',
      source: 'file',
      indexMode: 'NONE',
      storeText: false,
      folderId: 'f0f0f0f0-1111-4222-8333-444444444444',
      payload: { ssn: { $sealed: 'AAAA' } },
      schemaId: 'a1a1a1a1-1111-4222-8333-444444444444',
      schemaVersion: 2,
      typeName: 'invoice',
      userId: USER,
      scopes: ['org:acme'],
      externalId: 'ext-1',
      fileName: 'scan.pdf',
      fileType: 'application/pdf',
      uploadId: 'u-1',
      blindIndex: { ssn: 'c'.repeat(64) },
    },
  ],
  DocumentUpdated: [
    {
      documentId: 'd0c0d0c0-1111-4222-8333-444444444444',
      title: 't',
      folderId: 'f',
      payload: {},
      schemaId: null,
      schemaVersion: null,
      typeName: null,
      userId: null,
      scopes: [],
      change: 'put',
    },
    {
      documentId: 'd0c0d0c0-1111-4222-8333-444444444444',
      title: 't2',
      folderId: 'f',
      payload: richPayload,
      schemaId: 's',
      schemaVersion: 1,
      typeName: 'invoice',
      userId: USER,
      scopes: ['org:a', 'client:b'],
      change: 'patch',
      blindIndex: { a: 'b' },
    },
  ],
  DocumentUploadRequested: [
    {
      documentId: 'd0c0d0c0-1111-4222-8333-444444444444',
      uploadId: 'u-2',
      fileName: 'a.docx',
      fileType: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
    },
  ],
  DocumentFileUploaded: [
    {
      documentId: 'd0c0d0c0-1111-4222-8333-444444444444',
      uploadId: 'u-2',
      fileRef: 't/c/d/file-u-2',
      fileSize: 26214400,
      fileType: 'text/csv',
    },
  ],
  DocumentExtractionStarted: [{ documentId: 'd0c0d0c0-1111-4222-8333-444444444444', uploadId: 'u-2' }],
  DocumentTextReady: [
    {
      documentId: 'd0c0d0c0-1111-4222-8333-444444444444',
      textRef: 't/c/d/text-r1',
      textBytes: 0,
      indexMode: 'TEXT',
      textRevision: 1,
    },
  ],
  DocumentIndexed: [{ documentId: 'd0c0d0c0-1111-4222-8333-444444444444', status: 'INDEXED', textRevision: 3 }],
  DocumentIndexSkipped: [
    { documentId: 'd0c0d0c0-1111-4222-8333-444444444444', status: 'STORED', textRevision: 1 },
    { documentId: 'd0c0d0c0-1111-4222-8333-444444444444', status: 'SKIPPED', textRevision: 2 },
  ],
  DocumentFailed: [
    {
      documentId: 'd0c0d0c0-1111-4222-8333-444444444444',
      code: 'INDEXING_FAILED',
      message: 'The PDF could not be read',
    },
  ],
  DocumentTextDiscarded: [{ documentId: 'd0c0d0c0-1111-4222-8333-444444444444', textRevision: 1 }],
  DocumentDeleted: [
    { documentId: 'd0c0d0c0-1111-4222-8333-444444444444', externalId: null },
    { documentId: 'd0c0d0c0-1111-4222-8333-444444444444', externalId: 'ext-1' },
  ],
  WebhookRegistered: [
    {
      webhookId: 'a1b2c3d4-0000-4000-8000-000000000001',
      accountId: ACCOUNT,
      tenantId: LIVE_TENANT,
      livemode: true,
      url: 'https://hooks.example.com/in?x=1',
      domain: 'hooks.example.com',
      events: ['record.indexed', 'document.failed'],
      apiVersion: '2024-01',
      sealedSecret: 'v1.bm9uY2U.c2VhbGVk',
      createdAt: 1764115200000,
    },
  ],
  WebhookUpdated: [
    {
      webhookId: 'a1b2c3d4-0000-4000-8000-000000000001',
      url: 'https://hooks.example.com/in',
      domain: 'hooks.example.com',
      events: ['trigger.failed'],
      apiVersion: '2024-01',
      status: 'ACTIVE',
      disabledReason: null,
      resetFailures: true,
    },
    {
      webhookId: 'a1b2c3d4-0000-4000-8000-000000000001',
      url: 'https://hooks.example.com/in',
      domain: 'hooks.example.com',
      events: ['record.failed'],
      apiVersion: '2024-01',
      status: 'DISABLED',
      disabledReason: 'manual',
      resetFailures: false,
    },
  ],
  WebhookDisabled: [
    { webhookId: 'a1b2c3d4-0000-4000-8000-000000000001', reason: 'consecutive_failures' },
    { webhookId: 'a1b2c3d4-0000-4000-8000-000000000001', reason: 'ssrf_blocked' },
  ],
  WebhookDeleted: [{ webhookId: 'a1b2c3d4-0000-4000-8000-000000000001', tenantId: TEST_TENANT }],
  WebhookDomainAdded: [{ accountId: ACCOUNT, domain: 'example.com', verificationToken: 'wv_0123456789abcdef' }],
  WebhookDomainVerified: [
    { accountId: ACCOUNT, domain: 'example.com', method: 'operator' },
    { accountId: ACCOUNT, domain: 'example.com', method: 'dns' },
  ],
  ScriptVersionPushed: [
    {
      scriptId: '5c5c5c5c-1111-4222-8333-444444444444',
      name: 'close-invoice',
      version: 1,
      source: 'export default (input) => input.params',
      sourceBytes: 39,
      declaredInputContract: null,
      description: null,
    },
    {
      scriptId: '5c5c5c5c-1111-4222-8333-444444444445',
      name: 'close-invoice',
      version: 2,
      source: 'export default async () => 1',
      sourceBytes: 28,
      declaredInputContract: { type: 'object' },
      description: 'v2',
    },
  ],
  ScriptVersionDeleted: [{ scriptId: '5c5c5c5c-1111-4222-8333-444444444444', name: 'close-invoice', version: 1 }],
  ScriptNameAdded: [{ name: 'close-invoice' }],
  TriggerRuleCreated: [
    {
      ruleId: '7a7a7a7a-1111-4222-8333-444444444444',
      name: 'audit-invoices',
      schemaId: 'aaaaaaaa-1111-4222-8333-444444444444',
      typeName: 'invoice',
      events: ['CREATE', 'UPDATE'],
      scriptRef: { name: 'audit', version: 2 },
      fields: ['amount'],
      grant: { allowedActions: ['records:r', 'records:c'], dataScope: { userId: '${{ input.userId }}' } },
      enabled: true,
    },
    {
      ruleId: '7a7a7a7a-1111-4222-8333-444444444444',
      name: 'on-delete',
      schemaId: 'aaaaaaaa-1111-4222-8333-444444444444',
      typeName: 'invoice',
      events: ['DELETE'],
      scriptRef: { name: 'audit', version: 1 },
      fields: [],
      grant: { allowedActions: ['records:c'], dataScope: null },
      enabled: false,
    },
    // a rule following the newest version
    {
      ruleId: '7a7a7a7a-1111-4222-8333-444444444444',
      name: 'follow',
      schemaId: 'aaaaaaaa-1111-4222-8333-444444444444',
      typeName: 'invoice',
      events: ['CREATE'],
      scriptRef: { name: 'audit', version: 'latest' },
      fields: [],
      grant: { allowedActions: ['records:c'], dataScope: null },
      enabled: true,
    },
  ],
  TriggerRuleDeleted: [
    { ruleId: '7a7a7a7a-1111-4222-8333-444444444444', schemaId: 'aaaaaaaa-1111-4222-8333-444444444444' },
  ],
  TriggerRuleBound: [
    {
      ruleId: '7a7a7a7a-1111-4222-8333-444444444444',
      schemaId: 'aaaaaaaa-1111-4222-8333-444444444444',
      fields: ['amount', 'status'],
      enabled: true,
    },
  ],
  TriggerRuleUnbound: [
    { ruleId: '7a7a7a7a-1111-4222-8333-444444444444', schemaId: 'aaaaaaaa-1111-4222-8333-444444444444' },
  ],
  TriggerFired: [
    {
      ruleId: '7a7a7a7a-1111-4222-8333-444444444444',
      eventId: 'e0e0e0e0-1111-4222-8333-444444444444',
      recordId: 'bbbbbbbb-1111-4222-8333-444444444444',
      executionId: 'x1',
      depth: 1,
    },
  ],
  TriggerFailed: [
    {
      failureId: 'f1f1f1f1-1111-4222-8333-444444444444',
      ruleId: '7a7a7a7a-1111-4222-8333-444444444444',
      eventId: 'e0e0e0e0-1111-4222-8333-444444444444',
      scriptRef: { name: 'audit', version: 2 },
      recordId: 'bbbbbbbb-1111-4222-8333-444444444444',
      event: 'UPDATE',
      reason: 'INPUT_TOO_LARGE',
      message: 'record plus previous is 300000 bytes, over 229376',
      attempts: 1,
      firstFailedAt: '2026-08-01T10:11:12.345Z',
      lastFailedAt: '2026-08-01T10:11:12.345Z',
    },
    {
      failureId: 'f1f1f1f1-1111-4222-8333-444444444444',
      ruleId: '7a7a7a7a-1111-4222-8333-444444444444',
      eventId: 'e0e0e0e0-1111-4222-8333-444444444444',
      scriptRef: { name: 'audit', version: 'latest' },
      recordId: 'bbbbbbbb-1111-4222-8333-444444444444',
      event: 'CREATE',
      reason: 'SCRIPT_ERROR',
      message: 'boom',
      attempts: 6,
      firstFailedAt: '2026-08-01T10:11:12.345Z',
      lastFailedAt: '2026-08-01T18:11:12.345Z',
    },
  ],
  UsageMetered: [
    {
      tenantId: LIVE_TENANT,
      contextId: LIVE_CTX,
      period: '2026-08',
      items: [
        { category: 'recordWrite', count: 1, units: 0, milli: 1000 },
        { category: 'recordIndex', count: 0, units: 5, milli: 4000 },
      ],
    },
    {
      tenantId: TEST_TENANT,
      contextId: null,
      period: '2026-09',
      items: [{ category: 'scriptExecution', count: 1, units: 120, milli: 75, includedMillis: 50, billableMillis: 75 }],
    },
  ],
  ReadsMetered: [
    {
      tenantId: LIVE_TENANT,
      contextId: LIVE_CTX,
      period: '2026-08',
      calls: 42,
      bytes: 123_456,
      terms: { includedCalls: 100_000, callsPerCredit: 1000, includedBytes: 1_073_741_824, bytesPerCredit: 10_485_760 },
    },
  ],
};

const cases = (Object.keys(SAMPLES) as EventType[]).flatMap((type) =>
  SAMPLES[type].map((sample, i) => ({ type, label: `${type} #${i + 1}`, sample })),
);

describe('Avro event codecs', () => {
  it('has a hand-written sample for every event type in the catalogue (add one when you add a type)', () => {
    expect(Object.keys(SAMPLES).sort()).toEqual(Object.keys(EVENT_TYPES).sort());
    for (const type of Object.keys(EVENT_TYPES) as EventType[])
      expect(SAMPLES[type]?.length ?? 0, type).toBeGreaterThan(0);
  });

  it.each(cases)('samples are valid catalogue data: $label', ({ type, sample }) => {
    expect(EVENT_TYPES[type].parse(sample)).toEqual(sample);
  });

  it.each(cases)('round-trips $label through Avro unchanged', ({ type, sample }) => {
    const codec = eventCodec(type);
    const decoded = codec.decode(codec.encode(sample));
    expect(decoded).toStrictEqual(sample);
    expect(EVENT_TYPES[type].parse(decoded)).toStrictEqual(sample);
  });

  it('gives each event type a stable fingerprint and a schema in the catalogue', () => {
    const catalogue = avroCatalogue();
    expect(Object.keys(catalogue).sort()).toEqual(Object.keys(EVENT_TYPES).sort());
    for (const type of Object.keys(EVENT_TYPES) as EventType[]) {
      expect(eventCodec(type).fingerprint).toMatch(/^[0-9a-f]{16}$/);
      expect(eventCodec(type)).toBe(eventCodec(type));
    }
    const prints = (Object.keys(EVENT_TYPES) as EventType[]).map((t) => eventCodec(t).fingerprint);
    expect(new Set(prints).size).toBe(prints.length);
  });

  it('refuses to encode data that does not match the schema', () => {
    expect(() => eventCodec('ContextDeleted').encode({ contextId: 'x' })).toThrow();
    expect(() =>
      eventCodec('ContextCreated').encode({
        contextId: 'x',
        tenantId: 't',
        accountId: 'a',
        name: 'n',
        isDefault: 'yes',
      }),
    ).toThrow();
  });
});

describe('Avro metadata codec', () => {
  const full: EventMetadata = {
    tenantId: LIVE_TENANT,
    contextId: LIVE_CTX,
    accountId: ACCOUNT,
    actorKeyId: 'c0c0c0c0-1111-4222-8333-444444444444',
    userId: USER,
    requestId: 'f0f0f0f0-1111-4222-8333-444444444444',
    occurredAt: '2026-08-01T10:11:12.345Z',
    schemaVersion: 1,
  };
  const empty: EventMetadata = {
    tenantId: null,
    contextId: null,
    accountId: null,
    actorKeyId: null,
    userId: null,
    requestId: null,
    occurredAt: '2026-08-01T00:00:00.000Z',
    schemaVersion: 1,
  };

  it.each([
    ['every field set', full],
    ['every nullable field null', empty],
    ['a trigger depth', { ...full, triggerDepth: 3 }],
    ['a compact write charge', { ...full, chargeCode: 'recordWrite 1 0 1000;recordIndex 0 2 2000' }],
    [
      'a write charge',
      {
        ...full,
        charge: [
          { category: 'recordWrite', count: 1, units: 0, milli: 1000 },
          { category: 'recordIndex', count: 0, units: 2, milli: 2000 },
        ],
      },
    ],
  ] as Array<[string, EventMetadata]>)('round-trips metadata with %s', (_, md) => {
    const decoded = metadataCodec.decode(metadataCodec.encode(md));
    expect(decoded).toStrictEqual(md);
    expect(eventMetadata.parse(decoded)).toStrictEqual(md);
  });
});
