import { accountCreatedResponse, conflict, contextResponse, createAccountBody, createContextBody, createScopedKeyBody, CURRENT_WIRE_VERSION, type DomainEvent, type EventData, forbidden, hashSecret, idParam, invalid, mintTokenBody, mintTokenResponse, newSecret, notFound, patchAccountBody, PREFIX, type RequestMeta, rotateRootKeyParams, rotateRootKeyResponse, route, type RouteSpec, scopedKeyResponse } from '@svc/contracts';
import { accountDecider, type AccountState, credentialAggregate, type CredentialState, decideRevoke, isTornDown, narrowChild, type Plan, type RootKeyIndex, streams, type TenantContexts, WrongExpectedRevisionError } from '@svc/domain';
import { commit, handleCommand, loadAggregate, metadataFor, type CommandDeps, type DomainAppend } from '../handle-command';
import { contended } from '../contention';
import { contextRootAppend } from '../folders/load';

type Issued = EventData<'CredentialIssued'>;
const DEFAULT_TOKEN_TTL_SECONDS = 3600;

type ContextState = { exists: boolean; tenantId?: string; accountId?: string; isDefault?: boolean };
const contextAggregate = {
  initialState: (): ContextState => ({ exists: false }),
  evolve: (s: ContextState, e: DomainEvent): ContextState =>
    e.type === 'ContextCreated' ? { exists: true, tenantId: e.data.tenantId, accountId: e.data.accountId, isDefault: e.data.isDefault } : e.type === 'ContextDeleted' ? { ...s, exists: false } : s,
};
const accountAggregate = { initialState: accountDecider.initialState, evolve: accountDecider.evolve as (s: AccountState, e: DomainEvent) => AccountState };

export interface OpenAccountInput {
  plan?: Plan;
  name?: string;
  inferenceBalanceCents?: number;
  creditLimit?: number;
  rateLimitPerMinute?: number;
  entitlements?: { allowGlobalRegion: boolean };
}

/** Creates an account with a live and a test tenant, a default context in each, root keys and a developer token. */
export async function openAccount(deps: CommandDeps, input: OpenAccountInput, meta: RequestMeta) {
  const accountId = deps.ids.newId();
  const env = (e: 'live' | 'test') => ({ tenantId: deps.ids.newId(), contextId: deps.ids.newId(), rootKey: newSecret(e === 'live' ? PREFIX.rootLive : PREFIX.rootTest) });
  const live = env('live');
  const test = env('test');
  const developerToken = newSecret(PREFIX.developer);
  const plan = input.plan ?? 'free';
  const md = metadataFor(meta, null, null);
  const cred = (kind: Issued['kind'], secret: string, tenantId: string | null, environment: Issued['environment']): Issued => ({
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
  const creds = [cred('root', live.rootKey, live.tenantId, 'live'), cred('root', test.rootKey, test.tenantId, 'test'), cred('developer', developerToken, null, null)];
  const opened: DomainEvent = {
    type: 'AccountOpened',
    data: {
      accountId,
      name: input.name ?? null,
      plan,
      inferenceBalanceCents: input.inferenceBalanceCents ?? 0,
      creditLimit: input.creditLimit ?? null,
      rateLimitPerMinute: input.rateLimitPerMinute ?? null,
      entitlements: input.entitlements ?? { allowGlobalRegion: false },
      tenants: { live: { tenantId: live.tenantId, contextId: live.contextId }, test: { tenantId: test.tenantId, contextId: test.contextId } },
    },
  };
  const ctx = (t: typeof live): DomainEvent => ({ type: 'ContextCreated', data: { contextId: t.contextId, tenantId: t.tenantId, accountId, name: 'default', isDefault: true } });
  await commit(deps, md, [
    { streamId: streams.account(accountId), events: [opened], expectedRevision: 'no_stream' },
    { streamId: streams.context(live.contextId), events: [ctx(live)], expectedRevision: 'no_stream', metadata: { ...md, tenantId: live.tenantId } },
    { streamId: streams.context(test.contextId), events: [ctx(test)], expectedRevision: 'no_stream', metadata: { ...md, tenantId: test.tenantId } },
    // Each context comes with its root folder (never created by a read).
    contextRootAppend(md, live.tenantId, live.contextId),
    contextRootAppend(md, test.tenantId, test.contextId),
    ...creds.map((c) => ({ streamId: streams.credential(c.credentialId), events: [{ type: 'CredentialIssued', data: c } as DomainEvent], expectedRevision: 'no_stream' as const, metadata: { ...md, tenantId: c.tenantId } })),
  ]);
  return { accountId, plan, developerToken, tenants: { live, test } };
}

/** A live context of the principal's tenant, read from its own stream (never from a projection). */
async function requireContext(deps: CommandDeps, tenantId: string, contextId: string): Promise<ContextState> {
  const { state } = await loadAggregate(deps.store, streams.context(contextId), contextAggregate);
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
  for (let id = token.parentCredentialId; id !== undefined; ) {
    if (ancestors.length >= MAX_MINT_CHAIN) return null;
    const { state } = await loadAggregate(deps.store, streams.credential(id), credentialAggregate);
    if (!state.exists) break;
    if (state.revoked) return null;
    ancestors.push(id);
    id = state.parentCredentialId;
  }
  return ancestors;
}

/** Revokes one credential through its own stream (a concurrent revocation makes the later one a 404). */
async function revoke(deps: CommandDeps, meta: RequestMeta, target: CredentialState & { exists: true }) {
  await handleCommand(deps, streams.credential(target.credentialId), credentialAggregate, (s) => ({ events: decideRevoke(s) }), metadataFor(meta, target.tenantId, target.contextId));
}

async function issue(deps: CommandDeps, meta: RequestMeta, c: Omit<Issued, 'credentialId' | 'secretHash' | 'prefix'>, prefix: string) {
  const secret = newSecret(prefix);
  const data: Issued = { ...c, credentialId: deps.ids.newId(), secretHash: hashSecret(secret), prefix };
  await commit(deps, metadataFor(meta, c.tenantId, c.contextId), [{ streamId: streams.credential(data.credentialId), events: [{ type: 'CredentialIssued', data }], expectedRevision: 'no_stream' }]);
  return { data, secret };
}

/**
 * `rootKeys` (the read model's list of live root keys) enables root-key rotation; `contexts` (the read model's
 * live contexts of a tenant) enables tenant teardown.
 */
export function tenancyCommandRoutes(deps: CommandDeps, rootKeys?: RootKeyIndex, contexts?: TenantContexts): RouteSpec[] {
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
        const { state } = await handleCommand(deps, streams.account(params.id), accountAggregate, (s) => ({ events: accountDecider.decideChange(body, s) }), metadataFor(meta, null, null));
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
        const { dataScope, userId } = narrowChild(p, { allowedActions: body.scope.allowedActions, userId: body.userId, dataScope: body.scope.dataScope });
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
      summary: 'Revoke a minted token and every token minted from it (by the tenant root key, the token itself, or a credential it descends from)',
      params: idParam,
      status: 204,
      write: true,
      handler: async ({ params, principal: p, meta }) => {
        const { state } = await loadAggregate(deps.store, streams.credential(params.id), credentialAggregate);
        if (!state.exists || state.kind !== 'token' || state.tenantId !== p.tenantId) throw notFound();
        const lineage = await liveLineage(deps, state);
        if (!lineage) throw notFound();
        const allowed = p.kind === 'root' || p.credentialId === state.credentialId || lineage.includes(p.credentialId);
        if (!allowed) throw notFound();
        await revoke(deps, meta, state);
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
        const data = { contextId, tenantId: p.tenantId!, accountId: p.accountId, name: body.name, isDefault: false };
        const md = metadataFor(meta, p.tenantId, contextId);
        await commit(deps, md, [{ streamId: streams.context(contextId), events: [{ type: 'ContextCreated', data }], expectedRevision: 'no_stream' }, contextRootAppend(md, p.tenantId!, contextId)]);
        return { id: contextId, tenantId: data.tenantId, name: data.name, isDefault: false, createdAt: meta.now.toISOString() };
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
        await handleCommand(
          deps,
          streams.context(params.id),
          contextAggregate,
          (s) => {
            if (!s.exists || s.tenantId !== p.tenantId) throw notFound();
            if (s.isDefault) throw invalid('The default context cannot be deleted');
            return { events: [{ type: 'ContextDeleted', data: { contextId: params.id, tenantId: p.tenantId! } }] };
          },
          metadataFor(meta, p.tenantId, params.id),
        );
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
      handler: async ({ body, principal: p, meta }) => {
        const { state } = await loadAggregate(deps.store, streams.account(p.accountId), accountAggregate);
        if (!state.exists) throw forbidden();
        const environment = state.tenants.live.tenantId === body.tenantId ? 'live' : state.tenants.test.tenantId === body.tenantId ? 'test' : null;
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
            ...narrowChild(ACCOUNT_WIDE, { allowedActions: body.allowedActions, userId: body.userId, dataScope: body.dataScope }),
            expiresAt: null,
            wireVersionPin: CURRENT_WIRE_VERSION,
          },
          PREFIX.scoped,
        );
        return { id: data.credentialId, key: secret, tenantId: body.tenantId, contextId, allowedActions: data.allowedActions, crossContext: data.crossContext };
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
        const { state } = await loadAggregate(deps.store, streams.credential(params.id), credentialAggregate);
        if (!state.exists || state.kind !== 'scoped' || state.accountId !== p.accountId) throw notFound();
        await revoke(deps, meta, state);
        return null;
      },
    }),
    route({
      method: 'POST',
      url: '/developer/tenants/:tenantId/root-key/rotate',
      auth: 'developer',
      summary: 'Rotate the root key of one of the account tenants: the old key (and every token minted from it) stops working, the new key is returned once',
      params: rotateRootKeyParams,
      response: rotateRootKeyResponse,
      write: true,
      handler: async ({ params, principal: p, meta }) => {
        if (!rootKeys) throw notFound();
        const { state: account } = await loadAggregate(deps.store, streams.account(p.accountId), accountAggregate);
        if (!account.exists) throw notFound();
        const tenantId = params.tenantId;
        const environment = account.tenants.live.tenantId === tenantId ? 'live' : account.tenants.test.tenantId === tenantId ? 'test' : null;
        if (!environment || (await isTornDown(deps.store, tenantId))) throw notFound();
        // The read model names the current root key(s); each one's own stream decides, so two rotations cannot both revoke it.
        await deps.barrier.waitFor(await deps.store.headPosition());
        const revocations: DomainAppend[] = [];
        for (const id of await rootKeys.activeRootKeys(tenantId)) {
          const { state, revision } = await loadAggregate(deps.store, streams.credential(id), credentialAggregate);
          if (!state.exists || state.kind !== 'root' || state.tenantId !== tenantId) continue;
          if (state.revoked) throw conflict(ROTATION_CONFLICT);
          revocations.push({ streamId: streams.credential(id), events: decideRevoke(state), expectedRevision: revision });
        }
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
        try {
          await commit(deps, metadataFor(meta, tenantId, null), [
            ...revocations,
            { streamId: streams.credential(data.credentialId), events: [{ type: 'CredentialIssued', data }], expectedRevision: 'no_stream' },
          ]);
        } catch (e) {
          if (e instanceof WrongExpectedRevisionError) throw conflict(ROTATION_CONFLICT);
          throw e;
        }
        return { id: data.credentialId, tenantId, environment, rootKey: secret };
      },
    }),
    route({
      method: 'DELETE',
      url: '/developer/tenants/:tenantId',
      auth: 'developer',
      summary:
        'Tear down one of the account tenants (live or test), irreversibly: every context and everything in it (records, documents and their files, folders, schemas, users, entities, namespaces, history, search indexes) and every credential of the tenant; the other tenant is untouched',
      params: rotateRootKeyParams,
      status: 204,
      write: true,
      handler: async ({ params, principal: p, meta }) => {
        if (!contexts) throw notFound();
        const { state: account } = await loadAggregate(deps.store, streams.account(p.accountId), accountAggregate);
        if (!account.exists) throw notFound();
        const tenantId = params.tenantId;
        const environment = account.tenants.live.tenantId === tenantId ? 'live' : account.tenants.test.tenantId === tenantId ? 'test' : null;
        // Another account's tenant, an unknown one and one already torn down read the same.
        if (!environment || (await isTornDown(deps.store, tenantId))) throw notFound();
        const teardown = streams.tenant(tenantId);
        for await (const _attempt of contended()) {
          // The read model names the live contexts (caught up first); each one's own stream decides.
          await deps.barrier.waitFor(await deps.store.headPosition());
          const ids = new Set([account.tenants[environment].contextId, ...(await contexts.liveContexts(tenantId))]);
          const appends: DomainAppend[] = [];
          for (const contextId of ids) {
            const { state, revision } = await loadAggregate(deps.store, streams.context(contextId), contextAggregate);
            if (!state.exists || state.tenantId !== tenantId) continue;
            appends.push({
              streamId: streams.context(contextId),
              events: [{ type: 'ContextDeleted', data: { contextId, tenantId } }],
              expectedRevision: revision,
              metadata: metadataFor(meta, tenantId, contextId),
            });
          }
          const contextIds = appends.map((a) => (a.events[0].data as { contextId: string }).contextId);
          appends.push({ streamId: teardown, events: [{ type: 'TenantTornDown', data: { tenantId, accountId: p.accountId, environment, contextIds } }], expectedRevision: 'no_stream' });
          try {
            await commit(deps, metadataFor(meta, tenantId, null), appends);
            return null;
          } catch (e) {
            if (!(e instanceof WrongExpectedRevisionError)) throw e;
            // A concurrent teardown won (404), or a context was deleted meanwhile: decide again.
            if (e.streamId === teardown) throw notFound();
          }
        }
        throw conflict('The tenant changed concurrently; retry');
      },
    }),
  ];
}

/** The developer token's reach over its account's tenants: every permission, every user, every scope. */
const ACCOUNT_WIDE = { allowedActions: ['*'], dataScope: null, userId: null };

const ROTATION_CONFLICT = 'Another rotation of this root key happened at the same time; the key it returned is the current one';
