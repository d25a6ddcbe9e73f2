import { contended } from '../contention';
import { conflict, type CreateUser, createUserBody, forbidden, idParam, invalid, notFound, patchUserBody, type Principal, putUserBody, type RequestMeta, route, type RouteSpec, userResponse } from '@svc/contracts';
import { canReach, checkUserPatch, decideChangeUser, decideCreateUser, decideDeleteUser, emailKey, type EventStore, type LiveUser, stampOwnership, streams, userAggregate, userOwner, type UserState, userView, WrongExpectedRevisionError } from '@svc/domain';
import { commit, loadAggregate, metadataFor, type CommandDeps, type DomainAppend } from '../handle-command';
import { claim, readReservation, release, type Reservation } from '../reservations';
import { loadSchema, type LiveSchema } from '../schemas/routes';

/** One user per email in a tenant (across its contexts), compared without case. */
const emailReservation = (store: EventStore, tenantId: string, email: string) => readReservation(store, tenantId, 'user-email', emailKey(email));
const EMAIL_HELD = 'email is already used by another user';

/** Users bound to a `user` schema are created and written with the root key only (spec: Schema.allowedSurfaces). */
const requireRootForUserSchema = (p: Principal) => {
  if (p.kind !== 'root') throw forbidden();
};

async function userSchema(deps: CommandDeps, p: Principal, schemaId: string): Promise<LiveSchema> {
  const schema = await loadSchema(deps.store, p, schemaId).catch(() => {
    throw invalid(`schemaId '${schemaId}' is not a schema of this context`);
  });
  if (!schema.definition.allowedSurfaces.includes('user')) throw invalid('The schema does not allow the user surface');
  requireRootForUserSchema(p);
  return schema;
}

/** The schema a user was bound to (it may have been deleted since: then only the bare payload rules apply). */
const boundDefinition = async (deps: CommandDeps, p: Principal, u: LiveUser) => (u.schemaId ? (await loadSchema(deps.store, p, u.schemaId).catch(() => undefined))?.definition : undefined);

async function createUser(deps: CommandDeps, body: CreateUser, meta: RequestMeta) {
  const p = meta.principal;
  // A credential bound to an identity may act only on that user: it cannot create others.
  if (p.dataScope?.userId ?? p.userId) throw forbidden();
  const own = stampOwnership(p, { scopes: body.scopes });
  const schema = body.schemaId ? await userSchema(deps, p, body.schemaId) : undefined;
  const userId = deps.ids.newId();
  const events = deps.sealer.sealEvents(schema?.definition, decideCreateUser({ userId, email: body.email, displayName: body.displayName, payload: body.payload, schemaId: body.schemaId, definition: schema?.definition, scopes: own.scopes ?? [] }, { exists: false }));
  const r = body.email ? await emailReservation(deps.store, p.tenantId!, body.email) : undefined;
  if (r?.holder) throw conflict(EMAIL_HELD);
  const md = metadataFor(meta);
  try {
    await commit(deps, md, [{ streamId: streams.user(userId), events, expectedRevision: 'no_stream' }, ...(r ? [claim(r, userId)] : [])]);
  } catch (e) {
    if (e instanceof WrongExpectedRevisionError && r && e.streamId === r.streamId) throw conflict(EMAIL_HELD);
    throw e;
  }
  return userView(events.reduce<UserState>((s, e) => userAggregate.evolve(s, e, md), { exists: false }) as LiveUser, schema?.definition);
}

async function changeUser(deps: CommandDeps, id: string, kind: 'put' | 'patch', body: Record<string, unknown>, meta: RequestMeta) {
  const p = meta.principal;
  for await (const _attempt of contended()) {
    const { state: stored, revision } = await loadAggregate(deps.store, streams.user(id), userAggregate);
    if (!stored.exists || !canReach(p, userOwner(stored))) throw notFound();
    const cur: LiveUser = { ...stored, payload: deps.sealer.unseal(stored.payload) };
    if (kind === 'patch') checkUserPatch(body);
    if (cur.schemaId) requireRootForUserSchema(p);
    const scopes = 'scopes' in body ? (stampOwnership(p, { scopes: body.scopes as string[] }).scopes ?? []) : undefined;
    const definition = await boundDefinition(deps, p, cur);
    const events = deps.sealer.sealEvents(definition, decideChangeUser({ kind, body, definition, scopes }, cur));
    const next = events.reduce<UserState>((s, e) => userAggregate.evolve(s, e), cur) as LiveUser;
    const appends: DomainAppend[] = [{ streamId: streams.user(id), events, expectedRevision: revision }];
    let claimed: Reservation | undefined;
    if ((next.email && emailKey(next.email)) !== (cur.email && emailKey(cur.email))) {
      if (cur.email) {
        const old = await emailReservation(deps.store, cur.tenantId!, cur.email);
        if (old.holder === id) appends.push(release(old));
      }
      if (next.email) {
        claimed = await emailReservation(deps.store, cur.tenantId!, next.email);
        if (claimed.holder && claimed.holder !== id) throw conflict(EMAIL_HELD);
        if (!claimed.holder) appends.push(claim(claimed, id));
      }
    }
    const md = metadataFor(meta);
    try {
      await commit(deps, md, appends);
      return userView(events.reduce<UserState>((s, e) => userAggregate.evolve(s, e, md), cur) as LiveUser, definition);
    } catch (e) {
      if (e instanceof WrongExpectedRevisionError && e.streamId === streams.user(id)) continue;
      if (e instanceof WrongExpectedRevisionError && claimed && e.streamId === claimed.streamId) throw conflict(EMAIL_HELD);
      throw e;
    }
  }
  throw conflict('The user changed concurrently; retry');
}

async function deleteUser(deps: CommandDeps, id: string, meta: RequestMeta) {
  const p = meta.principal;
  for await (const _attempt of contended()) {
    const { state: cur, revision } = await loadAggregate(deps.store, streams.user(id), userAggregate);
    if (!cur.exists || !canReach(p, userOwner(cur))) throw notFound();
    if (cur.schemaId) requireRootForUserSchema(p);
    const events = decideDeleteUser(cur);
    const r = cur.email ? await emailReservation(deps.store, cur.tenantId!, cur.email) : undefined;
    try {
      await commit(deps, metadataFor(meta), [{ streamId: streams.user(id), events, expectedRevision: revision }, ...(r && r.holder === id ? [release(r)] : [])]);
      return;
    } catch (e) {
      if (e instanceof WrongExpectedRevisionError) continue;
      throw e;
    }
  }
  throw conflict('The user changed concurrently; retry');
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
    route({
      method: 'PUT',
      url: '/v1/users/:id',
      auth: 'data',
      permission: 'users:u',
      summary: 'Replace a user (email, displayName, payload; scopes when given)',
      params: idParam,
      body: putUserBody,
      response: userResponse,
      write: true,
      handler: ({ params, body, meta }) => changeUser(deps, params.id, 'put', body as Record<string, unknown>, meta),
    }),
    route({
      method: 'PATCH',
      url: '/v1/users/:id',
      auth: 'data',
      permission: 'users:u',
      summary: 'Patch a user (RFC 7386): email, displayName, payload, scopes',
      params: idParam,
      body: patchUserBody,
      response: userResponse,
      write: true,
      handler: ({ params, body, meta }) => changeUser(deps, params.id, 'patch', body, meta),
    }),
    route({
      method: 'DELETE',
      url: '/v1/users/:id',
      auth: 'data',
      permission: 'users:d',
      summary: 'Delete a user (its email becomes free)',
      params: idParam,
      status: 204,
      write: true,
      handler: async ({ params, meta }) => {
        await deleteUser(deps, params.id, meta);
        return null;
      },
    }),
  ];
}
