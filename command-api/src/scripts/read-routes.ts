import { invalid, type RequestMeta, type RouteSpec, ServiceError } from '@svc/contracts';
import { permitsRoute } from '@svc/domain';

/**
 * The read routes a script's list and lookup calls run (docs/scripts.md "Host
 * API"): the very RouteSpecs of the REST API, called in process with the
 * script's credential, so the query names, validation, data scopes and
 * pages are the REST call's. A permission refusal is AUTHORIZATION_DENIED.
 */
export type ReadRoutes = (
  method: 'GET' | 'POST',
  url: string,
  input: { query?: unknown; body?: unknown },
  meta: RequestMeta,
) => Promise<unknown>;

const issues = (e: { issues: Array<{ path: PropertyKey[]; message: string }> }) =>
  e.issues
    .slice(0, 5)
    .map((i) => (i.path.length ? `${i.path.map(String).join('.')}: ${i.message}` : i.message))
    .join('; ');

/** Query values as a query string would carry them (numbers and booleans as text). */
const asQuery = (q: unknown): Record<string, unknown> => {
  if (q === undefined || q === null) return {};
  if (typeof q !== 'object' || Array.isArray(q)) throw invalid('The query must be an object');
  return Object.fromEntries(
    Object.entries(q as Record<string, unknown>).map(([k, v]) => [
      k,
      typeof v === 'number' || typeof v === 'boolean' ? String(v) : v,
    ]),
  );
};

export function readRoutesOf(routes: RouteSpec[]): ReadRoutes {
  const byKey = new Map(routes.map((r) => [`${r.method} ${r.url}`, r]));
  return async (method, url, input, meta) => {
    const spec = byKey.get(`${method} ${url}`);
    if (!spec) throw new ServiceError('NOT_IMPLEMENTED', `${method} ${url} is not served by this process`);
    if (!permitsRoute(meta.principal.allowedActions, spec))
      throw new ServiceError('AUTHORIZATION_DENIED', 'The script call was denied.');
    const parse = (schema: RouteSpec['query'], value: unknown, where: string) => {
      if (!schema) return value;
      const r = schema.safeParse(value);
      if (!r.success) throw invalid(`Invalid ${where}: ${issues(r.error)}`);
      return r.data;
    };
    const query = parse(spec.query, asQuery(input.query), 'query');
    const body = parse(spec.body, input.body ?? {}, 'body');
    return spec.handler({
      query,
      body,
      params: {},
      principal: meta.principal,
      meta,
      req: undefined as never,
      reply: undefined as never,
    });
  };
}
