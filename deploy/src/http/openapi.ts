import { z } from 'zod';
import { errorBody, type RouteSpec } from '@svc/contracts';

const toJson = (s: z.ZodTypeAny) => z.toJSONSchema(s, { io: 'input', unrepresentable: 'any' });

/** OpenAPI 3.1 built from the same zod schemas that validate requests. */
export function buildOpenApi(routes: RouteSpec[]) {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const r of routes) {
    const path = r.url.replace(/:([A-Za-z]+)/g, '{$1}');
    const parameters: unknown[] = [];
    for (const [where, schema] of [['path', r.params], ['query', r.query]] as const) {
      if (!schema) continue;
      const js = toJson(schema) as { properties?: Record<string, unknown>; required?: string[] };
      for (const [name, s] of Object.entries(js.properties ?? {})) parameters.push({ name, in: where, required: where === 'path' || (js.required ?? []).includes(name), schema: s });
    }
    const status = String(r.status ?? 200);
    (paths[path] ??= {})[r.method.toLowerCase()] = {
      summary: r.summary,
      ...(r.permission ? { 'x-permission': r.permission } : {}),
      security: r.auth === 'none' ? [] : [{ bearer: [] }],
      parameters,
      ...(r.body
        ? { requestBody: { required: true, content: Object.fromEntries((r.method === 'PATCH' ? ['application/json', 'application/merge-patch+json'] : ['application/json']).map((t) => [t, { schema: toJson(r.body!) }])) } }
        : {}),
      responses: {
        [status]: status === '204' ? { description: 'No content' } : { description: 'Success', content: { 'application/json': { schema: r.response ? toJson(r.response) : {} } } },
        default: { description: 'Error', content: { 'application/json': { schema: toJson(errorBody) } } },
      },
    };
  }
  return {
    openapi: '3.1.0',
    info: { title: 'Data, Document, Search and Inference Service', version: '0.45.0' },
    components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } } },
    paths,
  };
}
