import {
  conflict,
  type CreateUser,
  createUserBody,
  forbidden,
  patchUserBody,
  type Principal,
  putUserBody,
  type RequestMeta,
  route,
  type RouteSpec,
  userResponse,
} from '@svc/contracts';
import {
  type CommandDeps,
  type DomainAppend,
  emailKey,
  handleCommand,
  type LiveUser,
  metadataFor,
  moveReservation,
  readReservation,
  requireRootForUserSchema,
  stampOwnership,
  streams,
  userDecider,
  userView,
} from '@svc/domain';
import { deleteByIdRoute, writeByIdRoutes } from '../by-id-routes';
import type { LiveSchema } from '../schemas/routes';
import { boundDefinition, identitySchema } from './bound-schema';
import { assertScopeNamespaces } from './namespaces';

/** One user per email in a tenant (across its contexts), compared without case. */
const EMAIL_HELD = 'email is already used by another user';
const moveEmail = (
  deps: CommandDeps,
  tenantId: string,
  userId: string,
  before: string | null | undefined,
  after: string | null | undefined,
) =>
  moveReservation({
    read: (email) => readReservation(deps.store, tenantId, 'user-email', emailKey(email)),
    holderId: userId,
    before,
    after,
    held: EMAIL_HELD,
    same: (a, b) => emailKey(a) === emailKey(b),
  });

/** Losing the race for an email is a 409; for a reservation released, the next attempt reads it again. */
const onEmailConflict = (on: DomainAppend): 'retry' => {
  if (on.events[0]?.type === 'ReservationClaimed') throw conflict(EMAIL_HELD);
  return 'retry';
};

async function userSchema(deps: CommandDeps, p: Principal, schemaId: string): Promise<LiveSchema> {
  const schema = await identitySchema(deps.store, p, schemaId, 'user');
  requireRootForUserSchema(p);
  return schema;
}

async function createUser(deps: CommandDeps, body: CreateUser, meta: RequestMeta) {
  const p = meta.principal;
  // A credential bound to an identity may act only on that user: it cannot create others.
  if (p.dataScope?.userId ?? p.userId) throw forbidden();
  const own = stampOwnership(p, { scopes: body.scopes });
  await assertScopeNamespaces(deps.store, p.tenantId!, body.scopes);
  const schema = body.schemaId ? await userSchema(deps, p, body.schemaId) : undefined;
  const users = userDecider(deps.sealer);
  const userId = deps.ids.newId();
  const { state } = await handleCommand(deps, {
    streamId: streams.user(userId),
    aggregate: users,
    metadata: metadataFor(meta),
    fresh: true,
    decide: (s) => ({
      events: users.decide(
        {
          type: 'CreateUser',
          userId,
          email: body.email,
          displayName: body.displayName,
          payload: body.payload,
          schemaId: body.schemaId,
          definition: schema?.definition,
          scopes: own.scopes ?? [],
        },
        s,
      ),
    }),
    beforeAppend: () => moveEmail(deps, p.tenantId!, userId, null, body.email),
    onConflict: onEmailConflict,
  });
  return userView(state as LiveUser, schema?.definition);
}

async function changeUser(
  deps: CommandDeps,
  id: string,
  kind: 'put' | 'patch',
  body: Record<string, unknown>,
  meta: RequestMeta,
) {
  await assertScopeNamespaces(deps.store, meta.principal.tenantId!, body.scopes);
  const p = meta.principal;
  const users = userDecider(deps.sealer);
  const { state, prepared: definition } = await handleCommand(deps, {
    streamId: streams.user(id),
    aggregate: users,
    metadata: metadataFor(meta),
    prepare: (cur) => boundDefinition(deps.store, p, cur),
    decide: (s, definition) => ({ events: users.decide({ type: 'ChangeUser', actor: p, kind, body, definition }, s) }),
    // A changed email moves its reservation: the old one is released, the new one claimed (409 when another user holds
    // it).
    beforeAppend: ({ state: cur, next }) => {
      const [before, after] = [cur, next] as LiveUser[];
      return moveEmail(deps, before.tenantId!, id, before.email, after.email);
    },
    onConflict: onEmailConflict,
  });
  return userView(state as LiveUser, definition);
}

async function deleteUser(deps: CommandDeps, id: string, meta: RequestMeta) {
  const users = userDecider(deps.sealer);
  await handleCommand(deps, {
    streamId: streams.user(id),
    aggregate: users,
    metadata: metadataFor(meta),
    decide: (s) => ({ events: users.decide({ type: 'DeleteUser', actor: meta.principal }, s) }),
    // Its email becomes free.
    beforeAppend: ({ state }) => moveEmail(deps, (state as LiveUser).tenantId!, id, (state as LiveUser).email, null),
    onConflict: () => 'retry',
  });
}

export function userCommandRoutes(deps: CommandDeps): RouteSpec[] {
  return [
    route({
      method: 'POST',
      url: '/v1/users',
      auth: 'data',
      permission: 'users:c',
      summary: 'Create a user (email unique per tenant; a user-schema-bound user needs the root key)',
      body: createUserBody,
      response: userResponse,
      status: 201,
      write: true,
      handler: ({ body, meta }) => createUser(deps, body, meta),
    }),
    ...writeByIdRoutes({
      resource: 'users',
      response: userResponse,
      put: { summary: 'Replace a user (email, displayName, payload; scopes when given)', body: putUserBody },
      patch: { summary: 'Patch a user (RFC 7386): email, displayName, payload, scopes', body: patchUserBody },
      change: (id, kind, body, meta) => changeUser(deps, id, kind, body, meta),
    }),
    deleteByIdRoute({
      url: '/v1/users/:id',
      permission: 'users:d',
      summary: 'Delete a user (its email becomes free)',
      versioned: false,
      remove: (id, _expectedVersion, meta) => deleteUser(deps, id, meta),
    }),
  ];
}
