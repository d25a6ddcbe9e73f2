import type { FastifyInstance, FastifyPluginAsync, FastifySchema } from 'fastify';
import type { Area, RouteSpec } from '@svc/contracts';
import type { EdgeOptions } from './edge';
import { bodyDefaultOf, guardOf } from './guard';
import type { ZodTypeProvider } from './zod-provider';

/** Fastify's schemas of a route: the RouteSpec's own zod schemas, through the zod type provider. */
function schemaOf(spec: RouteSpec): FastifySchema | undefined {
  if (!spec.params && !spec.query && !spec.body) return undefined;
  const schema: FastifySchema = {};
  if (spec.params) schema.params = spec.params;
  if (spec.query) schema.querystring = spec.query;
  if (spec.body) schema.body = spec.body;
  return schema;
}

/**
 * A RouteSpec as a fastify route: the guard as its onRequest hook (before the
 * body is parsed), the zod schemas validating the request, then the handler
 * with the parsed values.
 */
function register(app: FastifyInstance, spec: RouteSpec, opts: EdgeOptions, now: () => Date) {
  app.withTypeProvider<ZodTypeProvider>().route({
    method: spec.method,
    url: spec.url,
    config: { auth: spec.auth, spec },
    schema: schemaOf(spec),
    onRequest: guardOf(spec, opts, now),
    preValidation: bodyDefaultOf(spec),
    handler: async (req, reply) => {
      const principal = req.principal!;
      // The declared status is the default; a handler may answer otherwise (e.g. 200 for an idempotent re-create).
      reply.status(spec.status ?? 200);
      const out = await spec.handler({
        body: req.body,
        query: req.query,
        params: req.params,
        principal,
        meta: { requestId: req.id, principal, now: now() },
        req,
        reply,
      });
      if (reply.sent) return reply;
      if (reply.statusCode === 204) return reply.send();
      return out;
    },
  });
}

/** An area's plugin: `app.register(areaPlugin(area, ...))`. */
export function areaPlugin(area: Area, opts: EdgeOptions, now: () => Date): FastifyPluginAsync {
  const plugin: FastifyPluginAsync = async (scope) => {
    if (area.rawBody) {
      scope.removeAllContentTypeParsers();
      scope.addContentTypeParser('*', (_req, _payload, done) => done(null, undefined));
    }
    for (const spec of area.routes) register(scope, spec, opts, now);
  };
  Object.defineProperty(plugin, 'name', { value: `area:${area.name}` });
  return plugin;
}

/** Routes outside any area plugin (tests, tools): registered on `app` directly, the same way. */
export function registerRoutes(app: FastifyInstance, routes: RouteSpec[], opts: EdgeOptions, now: () => Date) {
  for (const spec of routes) register(app, spec, opts, now);
}

/**
 * Groups route lists by area, in first-seen order, for registration: the write
 * and read sides of one area (records, say) become one plugin.
 */
export function byArea(lists: Area[]): Area[] {
  const areas = new Map<string, Area>();
  for (const a of lists) {
    const known = areas.get(a.name);
    if (!known) areas.set(a.name, { ...a, routes: [...a.routes] });
    else if (!!known.rawBody !== !!a.rawBody) throw new Error(`area '${a.name}' mixes raw-body and parsed routes`);
    else known.routes.push(...a.routes);
  }
  return [...areas.values()];
}
