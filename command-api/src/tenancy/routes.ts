import {
  accountCreatedResponse,
  conflict,
  contextResponse,
  createAccountBody,
  createContextBody,
  createScopedKeyBody,
  CURRENT_WIRE_VERSION,
  type EventData,
  forbidden,
  hashSecret,
  idParam,
  mintTokenBody,
  mintTokenResponse,
  newSecret,
  notFound,
  patchAccountBody,
  PREFIX,
  type RequestMeta,
  rotateRootKeyParams,
  rotateRootKeyResponse,
  route,
  type RouteSpec,
  scopedKeyResponse,
} from '@svc/contracts';
import {
  accountDecider,
  type CommandDeps,
  contextDecider,
  type ContextState,
  credentialDecider,
  type CredentialState,
  type DomainAppend,
  environmentOf,
  handleCommand,
  isTornDown,
  loadAggregate,
  metadataFor,
  narrowChild,
  type Plan,
  readModelsCaughtUp,
  type RootKeyIndex,
  streams,
  type TenantContexts,
  tenantDecider,
} from '@svc/domain';
import { contextRootAppend } from '../folders/load';

type Issued = EventData<'CredentialIssued'>;
const DEFAULT_TOKEN_TTL_SECONDS = 3600;

export interface OpenAccountInput {
  plan?: Plan;
  name?: string;
  inferenceBalanceCents?: number;
  creditLimit?: number;
  rateLimitPerMinute?: number;
  entitlements?: { allowGlobalRegion?: boolean };
}

/**
 * Creates an account with a live and a test tenant, a default context in each, root keys and a developer token.
 * With `ifNew`, an account another writer opened first under the same id (concurrent first starts) answers null.
 */
export async function openAccount(
  deps: CommandDeps,
  input: OpenAccountInput,
  meta: RequestMeta,
  o: { ifNew?: boolean } = {},
) {
  const accountId = deps.ids.newId();
  const env = (e: 'live' | 'test') => ({
    tenantId: deps.ids.newId(),
    contextId: deps.ids.newId(),
    rootKey: newSecret(e === 'live' ? PREFIX.rootLive : PREFIX.rootTest),
  });
  const live = env('live');
  const test = env('test');
  const developerToken = newSecret(PREFIX.developer);
  const plan = input.plan ?? 'free';
  const md = metadataFor(meta, null, null);
  const cred = (
    kind: Issued['kind'],
    secret: string,
    tenantId: string | null,
    environment: Issued['environment'],
  ): Issued => ({
    credentialId: deps.ids.newId(),
    accountId,
    kind,
    tenantId,
    environment,
    contextId: null,
    crossContext: kind === 'root',
    secretHash: hashSecret(secret),
    prefix: secret.slice(0, secret.indexOf('_', 3) + 1),
    allowedActions: ['*'],
    dataScope: null,
    userId: null,
    expiresAt: null,
    wireVersionPin: kind === 'developer' ? null : CURRENT_WIRE_VERSION,
  });
  const creds = [
    cred('root', live.rootKey, live.tenantId, 'live'),
    cred('root', test.rootKey, test.tenantId, 'test'),
    cred('developer', developerToken, null, null),
  ];
  // Fresh streams (new ids): each decides from its initial state.
  const ctx = (t: typeof live): DomainAppend => ({
    streamId: streams.context(t.contextId),
    events: contextDecider.decide(
      {
        type: 'CreateContext',
        contextId: t.contextId,
        tenantId: t.tenantId,
        accountId,
        name: 'default',
        isDefault: true,
      },
      contextDecider.initialState(),
    ),
    expectedRevision: 'no_stream',
    metadata: { ...md, tenantId: t.tenantId },
  });
  const issued = (c: Issued): DomainAppend => ({
    streamId: streams.credential(c.credentialId),
    events: credentialDecider.decide({ type: 'IssueCredential', ...c }, credentialDecider.initialState()),
    expectedRevision: 'no_stream',
    metadata: { ...md, tenantId: c.tenantId },
  });
  const opened = await handleCommand(deps, {
    streamId: streams.account(accountId),
    aggregate: accountDecider,
    metadata: md,
    fresh: true,
    onTaken: o.ifNew ? () => 'taken' as const : undefined,
    decide: (s) => ({
      events: accountDecider.decide(
        {
          type: 'OpenAccount',
          accountId,
          ...input,
          plan,
          tenants: {
            live: { tenantId: live.tenantId, contextId: live.contextId },
            test: { tenantId: test.tenantId, contextId: test.contextId },
          },
        },
        s,
      ),
      also: [
        ctx(live),
        ctx(test),
        // Each context comes with its root folder (never created by a read).
        contextRootAppend(md, live.tenantId, live.contextId),
        contextRootAppend(md, test.tenantId, test.contextId),
        ...creds.map(issued),
      ],
    }),
  });
  if (opened.answer === 'taken') return null;
  return { accountId, plan, developerToken, tenants: { live, test } };
}

/** A live context of the principal's tenant, read from its own stream (never from a projection). */
async function requireContext(
  deps: CommandDeps,
  tenantId: string,
  contextId: string,
): Promise<ContextState & { exists: true }> {
  const { state } = await loadAggregate(deps.store, streams.context(contextId), contextDecider);
  if (!state.exists || state.tenantId !== tenantId) throw notFound();
  return state;
}

/** Longest chain of minted tokens walked when revoking (a deeper chain is refused as not found). */
const MAX_MINT_CHAIN = 100;

/**
 * A minted token and its ancestors (parent first), read from their own
 * streams. Null when the token is dead: revoked itself or through an ancestor.
 */
async function liveLineage(deps: CommandDeps, token: CredentialState & { exists: true }): Promise<string[] | null> {
  if (token.revoked) return null;
  const ancestors: string[] = [];
  for (let id = token.parentCredentialId; id !== undefined;) {
    if (ancestors.length >= MAX_MINT_CHAIN) return null;
    const { state } = await loadAggregate(deps.store, streams.credential(id), credentialDecider);
    // A parent that is not stored is an identity provider's token (a JWT): the tokens it minted are still its own.
    if (!state.exists) {
      ancestors.push(id);
      break;
    }
    if (state.revoked) return null;
    ancestors.push(id);
    id = state.parentCredentialId;
  }
  return ancestors;
}

/** Revokes one credential through its own stream (a concurrent revocation makes the later one a 404). */
async function revoke(deps: CommandDeps, meta: RequestMeta, target: CredentialState & { exists: true }) {
  await handleCommand(deps, {
    streamId: streams.credential(target.credentialId),
    aggregate: credentialDecider,
    metadata: metadataFor(meta, target.tenantId, target.contextId),
    decide: (s) => ({ events: credentialDecider.decide({ type: 'RevokeCredential' }, s) }),
  });
}

/**
 * Revokes credential `id` when the caller may; a credential it may not revoke (or none) is a 404, telling nothing of
 * others' credentials.
 */
async function revokeIfAllowed(
  deps: CommandDeps,
  meta: RequestMeta,
  id: string,
  allowed: (c: CredentialState & { exists: true }) => boolean | Promise<boolean>,
) {
  const { state } = await loadAggregate(deps.store, streams.credential(id), credentialDecider);
  if (!state.exists || !(await allowed(state))) throw notFound();
  await revoke(deps, meta, state);
}

/**
 * One of the caller account's tenants: the account and the tenant's environment.
 * A tenant that is not the caller's (another account's, or an unknown one) is
 * 403 (spec "Errors": tenant not owned); the caller's own tenant already torn down is 404.
 */
async function ownLiveTenant(deps: CommandDeps, accountId: string, tenantId: string) {
  const { state: account } = await loadAggregate(deps.store, streams.account(accountId), accountDecider);
  if (!account.exists) throw forbidden();
  const environment = environmentOf(account, tenantId);
  if (!environment) throw forbidden();
  if (await isTornDown(deps.store, tenantId)) throw notFound();
  return { account, environment };
}

async function issue(
  deps: CommandDeps,
  meta: RequestMeta,
  c: Omit<Issued, 'credentialId' | 'secretHash' | 'prefix'>,
  prefix: string,
) {
  const secret = newSecret(prefix);
  const data: Issued = { ...c, credentialId: deps.ids.newId(), secretHash: hashSecret(secret), prefix };
  await handleCommand(deps, {
    streamId: streams.credential(data.credentialId),
    aggregate: credentialDecider,
    metadata: metadataFor(meta, c.tenantId, c.contextId),
    fresh: true,
    decide: (s) => ({ events: credentialDecider.decide({ type: 'IssueCredential', ...data }, s) }),
  });
  return { data, secret };
}

/**
 * `rootKeys` (the read model's list of live root keys) enables root-key rotation; `contexts` (the read model's
 * live contexts of a tenant) enables tenant teardown.
 */
export function tenancyCommandRoutes(
  deps: CommandDeps,
  rootKeys?: RootKeyIndex,
  contexts?: TenantContexts,
): RouteSpec[] {
  return [
    route({
      method: 'POST',
      url: '/operator/accounts',
      auth: 'operator',
      summary: 'Create an account with live and test tenants, root keys and a developer token',
      body: createAccountBody,
      response: accountCreatedResponse,
      status: 201,
      write: true,
      handler: ({ body, meta }) => openAccount(deps, body, meta),
    }),
    route({
      method: 'PATCH',
      url: '/operator/accounts/:id',
      auth: 'operator',
      summary: 'Change plan, limits, entitlements, or top up the inference balance',
      params: idParam,
      body: patchAccountBody,
      write: true,
      handler: async ({ params, body, meta }) => {
        const { state } = await handleCommand(deps, {
          streamId: streams.account(params.id),
          aggregate: accountDecider,
          metadata: metadataFor(meta, null, null),
          decide: (s) => ({ events: accountDecider.decide({ type: 'ChangeAccount', ...body }, s) }),
        });
        if (!state.exists) throw notFound();
        const { exists: _, ...account } = state;
        return account;
      },
    }),
    route({
      method: 'POST',
      url: '/v1/tokens',
      operationId: 'mintToken',
      auth: 'data',
      summary: 'Mint a token confined to one app context',
      body: mintTokenBody,
      response: mintTokenResponse,
      status: 201,
      write: true,
      handler: async ({ body, principal: p, meta }) => {
        const contextId = body.contextId ?? p.contextId!;
        if (contextId !== p.contextId && !p.crossContext) throw notFound();
        await requireContext(deps, p.tenantId!, contextId);
        // The child's reach is the intersection of the parent's and what it asks for; asking for more is a 403.
        const { dataScope, userId } = narrowChild(p, {
          allowedActions: body.scope.allowedActions,
          userId: body.userId,
          dataScope: body.scope.dataScope,
        });
        // A child never outlives the credential that minted it.
        const parentExpiry = p.expiresAt;
        const wanted = meta.now.getTime() + (body.expiresInSeconds ?? DEFAULT_TOKEN_TTL_SECONDS) * 1000;
        const expiresAt = new Date(parentExpiry !== undefined ? Math.min(wanted, parentExpiry) : wanted).toISOString();
        const { data, secret } = await issue(
          deps,
          meta,
          {
            accountId: p.accountId,
            kind: 'token',
            tenantId: p.tenantId,
            environment: p.environment,
            contextId,
            crossContext: false,
            allowedActions: body.scope.allowedActions,
            dataScope,
            userId,
            expiresAt,
            wireVersionPin: CURRENT_WIRE_VERSION,
            parentCredentialId: p.credentialId,
          },
          PREFIX.token,
        );
        return { id: data.credentialId, token: secret, contextId, expiresAt };
      },
    }),
    route({
      method: 'DELETE',
      url: '/v1/tokens/:id',
      auth: 'data',
      summary:
        'Revoke a minted token and every token minted from it (by the tenant root key, the token itself, ' +
        'or a credential it descends from)',
      params: idParam,
      status: 204,
      write: true,
      handler: async ({ params, principal: p, meta }) => {
        await revokeIfAllowed(deps, meta, params.id, async (c) => {
          if (c.kind !== 'token' || c.tenantId !== p.tenantId) return false;
          const lineage = await liveLineage(deps, c);
          return (
            lineage !== null &&
            (p.kind === 'root' || p.credentialId === c.credentialId || lineage.includes(p.credentialId))
          );
        });
        return null;
      },
    }),
    route({
      method: 'POST',
      url: '/v1/contexts',
      auth: 'data',
      summary: 'Create an app context in the caller tenant',
      body: createContextBody,
      response: contextResponse,
      status: 201,
      write: true,
      handler: async ({ body, principal: p, meta }) => {
        if (!p.crossContext) throw forbidden();
        const contextId = deps.ids.newId();
        const name = body.name ?? `context-${contextId.slice(0, 8)}`;
        const md = metadataFor(meta, p.tenantId, contextId);
        const { state } = await handleCommand(deps, {
          streamId: streams.context(contextId),
          aggregate: contextDecider,
          metadata: md,
          fresh: true,
          decide: (s) => ({
            events: contextDecider.decide(
              {
                type: 'CreateContext',
                contextId,
                tenantId: p.tenantId!,
                accountId: p.accountId,
                name,
                isDefault: false,
              },
              s,
            ),
            also: [contextRootAppend(md, p.tenantId!, contextId)],
          }),
        });
        const created = state as ContextState & { exists: true };
        return {
          id: contextId,
          contextId,
          tenantId: created.tenantId,
          name: created.name,
          isDefault: false,
          createdAt: meta.now.toISOString(),
        };
      },
    }),
    route({
      method: 'DELETE',
      url: '/v1/contexts/:id',
      auth: 'data',
      summary: 'Tear down an app context and everything in it (irreversible)',
      params: idParam,
      rootOnly: true,
      status: 204,
      write: true,
      handler: async ({ params, principal: p, meta }) => {
        await handleCommand(deps, {
          streamId: streams.context(params.id),
          aggregate: contextDecider,
          metadata: metadataFor(meta, p.tenantId, params.id),
          decide: (s) => ({ events: contextDecider.decide({ type: 'DeleteContext', tenantId: p.tenantId! }, s) }),
        });
        return null;
      },
    }),
    route({
      method: 'POST',
      url: '/developer/keys',
      auth: 'developer',
      summary: 'Create a scoped API key (ssk_) for one of the account tenants',
      body: createScopedKeyBody,
      response: scopedKeyResponse,
      status: 201,
      write: true,
      // An unknown context of the tenant is a 404 (requireContext).
      errors: [404],
      handler: async ({ body, principal: p, meta }) => {
        const { state } = await loadAggregate(deps.store, streams.account(p.accountId), accountDecider);
        if (!state.exists) throw forbidden();
        const environment = environmentOf(state, body.tenantId);
        if (!environment) throw forbidden();
        const contextId = body.contextId ?? state.tenants[environment].contextId;
        await requireContext(deps, body.tenantId, contextId);
        const { data, secret } = await issue(
          deps,
          meta,
          {
            accountId: p.accountId,
            kind: 'scoped',
            tenantId: body.tenantId,
            environment,
            contextId,
            crossContext: body.crossContext ?? false,
            allowedActions: body.allowedActions,
            ...narrowChild(ACCOUNT_WIDE, {
              allowedActions: body.allowedActions,
              userId: body.userId,
              dataScope: body.dataScope,
            }),
            expiresAt: null,
            wireVersionPin: CURRENT_WIRE_VERSION,
          },
          PREFIX.scoped,
        );
        return {
          id: data.credentialId,
          key: secret,
          tenantId: body.tenantId,
          contextId,
          allowedActions: data.allowedActions,
          crossContext: data.crossContext,
        };
      },
    }),
    route({
      method: 'DELETE',
      url: '/developer/keys/:id',
      auth: 'developer',
      summary: 'Revoke a scoped API key (ssk_) of the account, and every token minted from it',
      params: idParam,
      status: 204,
      write: true,
      handler: async ({ params, principal: p, meta }) => {
        await revokeIfAllowed(deps, meta, params.id, (c) => c.kind === 'scoped' && c.accountId === p.accountId);
        return null;
      },
    }),
    route({
      method: 'POST',
      url: '/developer/tenants/:tenantId/root-key/rotate',
      auth: 'developer',
      summary:
        'Rotate the root key of one of the account tenants: the old key (and every token minted from it) ' +
        'stops working, the new key is returned once',
      params: rotateRootKeyParams,
      response: rotateRootKeyResponse,
      write: true,
      handler: async ({ params, principal: p, meta }) => {
        if (!rootKeys) throw notFound();
        const tenantId = params.tenantId;
        const { environment } = await ownLiveTenant(deps, p.accountId, tenantId);
        const secret = newSecret(environment === 'live' ? PREFIX.rootLive : PREFIX.rootTest);
        const data: Issued = {
          credentialId: deps.ids.newId(),
          accountId: p.accountId,
          kind: 'root',
          tenantId,
          environment,
          contextId: null,
          crossContext: true,
          secretHash: hashSecret(secret),
          prefix: environment === 'live' ? PREFIX.rootLive : PREFIX.rootTest,
          allowedActions: ['*'],
          dataScope: null,
          userId: null,
          expiresAt: null,
          wireVersionPin: CURRENT_WIRE_VERSION,
        };
        await handleCommand(deps, {
          streamId: streams.credential(data.credentialId),
          aggregate: credentialDecider,
          metadata: metadataFor(meta, tenantId, null),
          fresh: true,
          // The read model names the current root key(s); each one's own stream decides, so two rotations cannot both
          // revoke it.
          prepare: async () => {
            await readModelsCaughtUp(deps);
            const revocations: DomainAppend[] = [];
            for (const id of await rootKeys.activeRootKeys(tenantId)) {
              const { state, revision } = await loadAggregate(deps.store, streams.credential(id), credentialDecider);
              if (!state.exists || state.kind !== 'root' || state.tenantId !== tenantId) continue;
              if (state.revoked) throw conflict(ROTATION_CONFLICT);
              revocations.push({
                streamId: streams.credential(id),
                events: credentialDecider.decide({ type: 'RevokeCredential' }, state),
                expectedRevision: revision,
              });
            }
            return revocations;
          },
          // The old keys' revocations come before the new key in the log, as they always have.
          decide: (s, revocations) => ({
            events: [],
            also: [
              ...revocations,
              {
                streamId: streams.credential(data.credentialId),
                events: credentialDecider.decide({ type: 'IssueCredential', ...data }, s),
                expectedRevision: 'no_stream',
              },
            ],
          }),
          onConflict: () => {
            throw conflict(ROTATION_CONFLICT);
          },
        });
        return { id: data.credentialId, tenantId, environment, rootKey: secret };
      },
    }),
    route({
      method: 'DELETE',
      url: '/developer/tenants/:tenantId',
      auth: 'developer',
      summary:
        'Tear down one of the account tenants (live or test), irreversibly: every context and everything ' +
        'in it (records, documents and their files, folders, schemas, users, entities, namespaces, ' +
        'history, search indexes) and every credential of the tenant; the other tenant is untouched',
      params: rotateRootKeyParams,
      status: 204,
      write: true,
      handler: async ({ params, principal: p, meta }) => {
        if (!contexts) throw notFound();
        const tenantId = params.tenantId;
        const { account, environment } = await ownLiveTenant(deps, p.accountId, tenantId);
        const teardown = streams.tenant(tenantId);
        await handleCommand(deps, {
          streamId: teardown,
          aggregate: tenantDecider,
          metadata: metadataFor(meta, tenantId, null),
          // The read model names the live contexts (caught up first); each one's own stream decides.
          prepare: async () => {
            await readModelsCaughtUp(deps);
            const ids = new Set([account.tenants[environment].contextId, ...(await contexts.liveContexts(tenantId))]);
            const deletions: DomainAppend[] = [];
            const contextIds: string[] = [];
            for (const contextId of ids) {
              const { state, revision } = await loadAggregate(deps.store, streams.context(contextId), contextDecider);
              const events = contextDecider.decide({ type: 'TearDownContext', tenantId }, state);
              if (!events.length) continue;
              deletions.push({
                streamId: streams.context(contextId),
                events,
                expectedRevision: revision,
                metadata: metadataFor(meta, tenantId, contextId),
              });
              contextIds.push(contextId);
            }
            return { deletions, contextIds };
          },
          // The contexts' deletions come before the teardown in the log, as they always have; a concurrent teardown
          // makes this one a 404.
          decide: (s, { deletions, contextIds }) => ({
            events: [],
            also: [
              ...deletions,
              {
                streamId: teardown,
                events: tenantDecider.decide(
                  { type: 'TearDownTenant', tenantId, accountId: p.accountId, environment, contextIds },
                  s,
                ),
                expectedRevision: 'no_stream',
              },
            ],
          }),
          // A context was deleted meanwhile: decide again.
          onConflict: () => 'retry',
        });
        return null;
      },
    }),
  ];
}

/** The developer token's reach over its account's tenants: every permission, every user, every scope. */
const ACCOUNT_WIDE = { allowedActions: ['*'], dataScope: null, userId: null };

const ROTATION_CONFLICT =
  'Another rotation of this root key happened at the same time; the key it returned is the current one';
