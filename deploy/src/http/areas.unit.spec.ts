import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { type Principal, route, ServiceError } from '@svc/contracts';
import type { FastifyInstance } from 'fastify';
import { areaPlugin, byArea } from './areas';
import { createEdge, type EdgeOptions } from './edge';

const root: Principal = {
  credentialId: 'k',
  kind: 'root',
  accountId: 'a',
  tenantId: 't',
  environment: 'live',
  contextId: 'c',
  crossContext: false,
  allowedActions: ['*'],
  dataScope: null,
  userId: null,
  wireVersionPin: null,
};
const scoped: Principal = { ...root, kind: 'scoped', allowedActions: ['things:r'] };

/**
 * The guard (preValidation) and the zod type provider: the spec's pre-flight order, then validation in the edge's
 * order.
 */
describe('area plugins: guard, then zod validation', () => {
  let app: FastifyInstance;
  const seen: unknown[] = [];
  let gateRefuses = false;
  beforeAll(async () => {
    const opts: EdgeOptions = {
      resolveCredential: async (t) => (t === 'root' ? root : t === 'scoped' ? scoped : null),
      contextExists: async () => false,
      preflight: [
        async () => {
          if (gateRefuses) throw new ServiceError('RATE_LIMITED');
        },
      ],
    };
    const now = () => new Date('2026-11-20T00:00:00Z');
    app = createEdge(opts);
    const things = [
      route({
        method: 'POST',
        url: '/v1/things',
        auth: 'data',
        permission: 'things:c',
        summary: 'create',
        query: z.object({ limit: z.coerce.number().int().optional() }),
        body: z.object({ name: z.string().default('unnamed') }).strict(),
        status: 201,
        handler: async ({ body, query, principal }) => (
          seen.push({ body, query }),
          { ...body, ...query, by: principal.kind }
        ),
      }),
      route({
        method: 'PUT',
        url: '/v1/things/:id',
        auth: 'data',
        summary: 'replace',
        params: z.object({ id: z.string().max(5) }),
        body: z.object({ name: z.string() }),
        handler: async ({ params, body }) => ({ ...params, ...body }),
      }),
      route({
        method: 'GET',
        url: '/v1/open',
        auth: 'none',
        summary: 'open',
        handler: async ({ principal }) => ({ principal: principal ?? null }),
      }),
    ];
    for (const area of byArea([
      { name: 'things', routes: things.slice(0, 1) },
      { name: 'open', routes: things.slice(2) },
      { name: 'things', routes: things.slice(1, 2) },
    ]))
      app.register(areaPlugin(area, opts, now));
    await app.ready();
  });
  afterAll(() => app.close());

  const call = async (method: 'POST' | 'PUT' | 'GET', url: string, token?: string, payload?: string) => {
    const r = await app.inject({
      method,
      url,
      payload,
      headers: {
        ...(token ? { authorization: `Bearer ${token}` } : {}),
        ...(payload !== undefined ? { 'content-type': 'application/json' } : {}),
      },
    });
    return { status: r.statusCode, body: r.json() };
  };

  it('parses the request with the route schemas and hands the handler the parsed values', async () => {
    const r = await call('POST', '/v1/things?limit=3', 'root', '{"name":"a"}');
    expect(r).toEqual({ status: 201, body: { name: 'a', limit: 3, by: 'root' } });
    // No body on a POST reads as {} (defaults apply).
    expect((await call('POST', '/v1/things', 'root')).body).toEqual({ name: 'unnamed', by: 'root' });
  });

  it('authentication, the permission check and the gates come before validation', async () => {
    expect((await call('POST', '/v1/things?limit=x', undefined, '{"zz":1}')).status).toBe(401);
    expect((await call('POST', '/v1/things?limit=x', 'scoped', '{"zz":1}')).status).toBe(403);
    gateRefuses = true;
    try {
      expect((await call('POST', '/v1/things?limit=x', 'root', '{"zz":1}')).body.errorCode).toBe('RATE_LIMITED');
    } finally {
      gateRefuses = false;
    }
  });

  it('answers the first refusal in the order path, query, body', async () => {
    expect((await call('POST', '/v1/things?limit=x', 'root', '{"zz":1}')).body).toMatchObject({
      errorCode: 'VALIDATION_ERROR',
      message: 'Invalid query: limit: Invalid input: expected number, received NaN',
    });
    expect((await call('POST', '/v1/things?limit=x', 'root', 'null')).body.message).toBe(
      'Invalid query: limit: Invalid input: expected number, received NaN',
    );
    expect((await call('POST', '/v1/things', 'root', '{"zz":1}')).body.message).toBe(
      'Invalid body: Unrecognized key: "zz"',
    );
    expect((await call('POST', '/v1/things?zz=%00', 'root', '{"zz":1}')).body.message).toBe(
      'zz: the text contains the NUL character (U+0000)',
    );
    expect((await call('PUT', '/v1/things/toolong', 'root')).body.message).toBe(
      'Invalid path: id: Too big: expected string to have <=5 characters',
    );
  });

  it('refuses a JSON null body, and a PUT without one', async () => {
    expect((await call('POST', '/v1/things', 'root', 'null')).body.message).toBe(
      'The body must be a JSON object, not null',
    );
    expect((await call('PUT', '/v1/things/a', 'root')).body.message).toBe('A PUT request needs a JSON object body');
    expect((await call('PUT', '/v1/things/a', 'root', '{"name":"b"}')).body).toEqual({ id: 'a', name: 'b' });
  });

  it('routes without credentials run no gate and carry no principal', async () => {
    gateRefuses = true;
    try {
      expect(await call('GET', '/v1/open')).toEqual({ status: 200, body: { principal: null } });
    } finally {
      gateRefuses = false;
    }
  });
});
