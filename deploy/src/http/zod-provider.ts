import type { FastifyRequest, FastifySchemaCompiler, FastifyTypeProvider } from 'fastify';
import type { z } from 'zod';
import { invalid, type RouteSpec, zodMessage } from '@svc/contracts';

/**
 * The zod type provider: a route's `schema.params`, `schema.querystring` and
 * `schema.body` are the RouteSpec's zod schemas (the same ones /openapi.json is
 * built from), fastify validates the request with them between the
 * preValidation and preHandler hooks, and the handler reads the parsed values
 * from `req.params`, `req.query` and `req.body`. Responses are not validated.
 */
export interface ZodTypeProvider extends FastifyTypeProvider {
  validator: this['schema'] extends z.ZodTypeAny ? z.output<this['schema']> : unknown;
  serializer: this['schema'] extends z.ZodTypeAny ? z.input<this['schema']> : unknown;
}

const WHERE: Record<string, string> = { params: 'path', querystring: 'query', body: 'body' };

/**
 * JSON `null`, or no body on a PUT or PATCH (the guard gives other methods `{}`):
 * fastify hands the validator `null` for both, so which one it was is told
 * from the request when the error is answered (`validationRefusal`).
 */
class MissingBody extends Error {}

/** The validator compiler of the zod type provider: the edge's 400 VALIDATION_ERROR, `Invalid <where>: <issues>`. */
export const zodValidatorCompiler: FastifySchemaCompiler<z.ZodTypeAny> = ({ schema, httpPart }) => {
  const where = WHERE[httpPart ?? ''] ?? httpPart;
  const isBody = httpPart === 'body';
  return (data: unknown) => {
    if (isBody && data === null) return { error: new MissingBody() };
    const r = schema.safeParse(data);
    return r.success ? { value: r.data } : { error: invalid(`Invalid ${where}: ${zodMessage(r.error)}`) };
  };
};

export function parseWith<T>(schema: z.ZodType<T> | undefined, value: unknown, where: string): T {
  if (!schema) return value as T;
  const r = schema.safeParse(value ?? (where === 'body' ? {} : value));
  if (!r.success) throw invalid(`Invalid ${where}: ${zodMessage(r.error)}`);
  return r.data;
}

/**
 * The refusal a failed validation answers with. Fastify checks the body before
 * the query; the edge's order is path, query, body, so a body refusal gives way
 * to the query's own (the query is still as received then).
 */
export function validationRefusal(
  req: FastifyRequest,
  err: Error & { validationContext?: string },
  spec: RouteSpec | undefined,
): Error {
  if (err.validationContext !== 'body') return err;
  if (spec?.query) {
    const q = spec.query.safeParse(req.query);
    if (!q.success) return invalid(`Invalid query: ${zodMessage(q.error)}`);
  }
  if (!(err instanceof MissingBody)) return err;
  return req.body === null
    ? invalid('The body must be a JSON object, not null')
    : invalid(`A ${req.method} request needs a JSON object body`);
}
