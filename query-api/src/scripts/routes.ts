import {
  forbidden,
  idParam,
  limitParam,
  listScriptsQuery,
  notFound,
  type Paginator,
  type RequestMeta,
  route,
  type RouteSpec,
  scriptListResponse,
  scriptResponse,
} from '@svc/contracts';
import {
  type EventStore,
  grants,
  isScriptEvent,
  scriptDecider,
  scriptIdReservationParts,
  scriptNamesOf,
  type ScriptVersion,
  scriptView,
  streams,
} from '@svc/domain';

/**
 * GET /v1/scripts/{id} and GET /v1/scripts[?name=] (docs/scripts.md). Versions
 * are read from their name's stream (a handful of events): the version id's
 * reservation names that stream. Without `name`, the context's names come from
 * its script-names stream (one event per name). `source` only with `scripts:r`.
 */
async function versionsOf(store: EventStore, streamId: string): Promise<ScriptVersion[]> {
  const events = await store.readStream(streamId);
  return events.reduce(
    (s, e) => (isScriptEvent(e) ? scriptDecider.evolve(s, e, e.metadata) : s),
    scriptDecider.initialState(),
  ).versions;
}

async function versionById(store: EventStore, meta: RequestMeta, id: string): Promise<ScriptVersion | null> {
  const [last] = await store.readStream(streams.reservation(...scriptIdReservationParts(id)), {
    direction: 'backwards',
    maxCount: 1,
  });
  if (!last || last.type !== 'ReservationClaimed') return null;
  const v = (await versionsOf(store, last.data.ownerId)).find((x) => x.id === id);
  return v && v.tenantId === meta.principal.tenantId && v.contextId === meta.principal.contextId ? v : null;
}

/**
 * Any script permission (`scripts:r`, `scripts:c`, `scripts:d`, `scripts:x[:<name>]`) lets a caller address versions;
 * none is a 403.
 */
const anyScriptPermission = (held: readonly string[]) => held.some((h) => h === '*' || h.startsWith('scripts:'));

/** Who may see a version: `scripts:r` or `scripts:c` (every name), `scripts:x[:<name>]` (that name). */
const maySee = (held: readonly string[], name: string) =>
  grants(held, 'scripts:r') || grants(held, 'scripts:c') || grants(held, `scripts:x:${name}`);

export function scriptQueryRoutes(store: EventStore, pages: Paginator): RouteSpec[] {
  return [
    route({
      method: 'GET',
      url: '/v1/scripts/:id',
      operationId: 'getScript',
      auth: 'data',
      summary: 'One script version (source only with scripts:r; the version alone with scripts:x)',
      params: idParam,
      response: scriptResponse,
      handler: async ({ params, meta }) => {
        const held = meta.principal.allowedActions;
        if (!anyScriptPermission(held)) throw forbidden();
        const v = await versionById(store, meta, params.id);
        if (!v || !maySee(held, v.name)) throw notFound();
        return scriptView(v, grants(held, 'scripts:r'));
      },
    }),
    route({
      method: 'GET',
      url: '/v1/scripts',
      operationId: 'listScripts',
      auth: 'data',
      summary:
        "A script name's versions, newest first; without name, the newest live version of every script " +
        'name in the context, by name (source only with scripts:r)',
      query: listScriptsQuery.extend({ limit: limitParam }),
      response: scriptListResponse,
      handler: async ({ query, meta }) => {
        const p = meta.principal;
        const held = p.allowedActions;
        const withSource = grants(held, 'scripts:r');
        if (!anyScriptPermission(held)) throw forbidden();
        if (query.name === undefined) {
          // Every name the caller may see, in name order, each as its newest live version (names without one are left
          // out).
          const scope = `script-names:${p.tenantId}:${p.contextId}`;
          const params = { limit: query.limit };
          const after = pages.start<string>(scope, params, query.startFrom);
          const names = scriptNamesOf(await store.readStream(streams.scriptNames(p.tenantId!, p.contextId!))).filter(
            (n) => (after === undefined || n > after) && maySee(held, n),
          );
          const rows: ScriptVersion[] = [];
          for (const name of names) {
            if (rows.length > query.limit) break;
            const newest = (await versionsOf(store, streams.script(p.tenantId!, p.contextId!, name))).at(-1);
            if (newest) rows.push(newest);
          }
          return pages.page(
            scope,
            params,
            rows,
            query.limit,
            (v) => v.name,
            (v) => scriptView(v, withSource),
          );
        }
        if (!maySee(held, query.name)) return { data: [], nextCursor: null };
        const scope = `scripts:${p.tenantId}:${p.contextId}`;
        const params = { name: query.name, limit: query.limit };
        const after = pages.start<number>(scope, params, query.startFrom);
        const all = (await versionsOf(store, streams.script(p.tenantId!, p.contextId!, query.name))).reverse();
        const rows = (after === undefined ? all : all.filter((v) => v.version < after)).slice(0, query.limit + 1);
        return pages.page(
          scope,
          params,
          rows,
          query.limit,
          (v) => v.version,
          (v) => scriptView(v, withSource),
        );
      },
    }),
  ];
}
