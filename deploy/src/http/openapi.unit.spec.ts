import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { route, type RouteSpec } from '@svc/contracts';
import { buildOpenApi, errorStatusesOf, operationIdOf, tagOf } from './openapi';

const r = (method: RouteSpec['method'], url: string, extra: Partial<RouteSpec> = {}): RouteSpec =>
  route({ method, url, auth: 'data', summary: `${method} ${url}`, handler: async () => ({}), ...extra });

describe('/openapi.json operation ids', () => {
  it.each([
    ['GET', '/v1/records', 'listRecords'],
    ['POST', '/v1/records', 'createRecord'],
    ['GET', '/v1/records/:id', 'getRecord'],
    ['PUT', '/v1/records/:id', 'updateRecord'],
    ['PATCH', '/v1/records/:id', 'patchRecord'],
    ['DELETE', '/v1/records/:id', 'deleteRecord'],
    ['GET', '/v1/documents/:id/text', 'getDocumentText'],
    ['GET', '/v1/records/:id/tombstone', 'getRecordTombstone'],
    ['GET', '/v1/documents/:id/download-url', 'getDocumentDownloadUrl'],
    ['POST', '/v1/documents/upload', 'uploadDocument'],
    ['POST', '/v1/documents/:id/ask', 'askDocument'],
    ['POST', '/v1/scripts', 'createScript'],
    ['POST', '/v1/scripts/execute', 'executeScript'],
    ['GET', '/v1/trigger-failures', 'listTriggerFailures'],
    ['DELETE', '/v1/triggers/:id', 'deleteTrigger'],
    ['GET', '/v1/entities', 'listEntities'],
    ['POST', '/v1/entities', 'createEntity'],
    ['GET', '/v1/usage', 'getUsage'],
    ['POST', '/v1/erasure-requests', 'createErasureRequest'],
    ['GET', '/developer/webhooks/:id/deliveries', 'listWebhookDeliveries'],
    ['POST', '/developer/webhooks/:id/deliveries/:deliveryId/retry', 'retryWebhookDelivery'],
    ['POST', '/developer/tenants/:tenantId/root-key/rotate', 'rotateTenantRootKey'],
    ['DELETE', '/developer/tenants/:tenantId', 'deleteTenant'],
    ['POST', '/developer/domains/:domain/verify', 'verifyDomain'],
    ['POST', '/operator/domains/verify', 'verifyOperatorDomain'],
    ['GET', '/operator/accounts/:id', 'getOperatorAccount'],
  ] as const)('%s %s derives %s', (method, url, id) => {
    expect(operationIdOf({ method, url })).toBe(id);
  });

  it("a route's own operationId wins over the derived one", () => {
    expect(operationIdOf({ method: 'POST', url: '/v1/documents', operationId: 'ingestDocument' })).toBe(
      'ingestDocument',
    );
  });

  it('two operations with one id stop the build, naming both routes', () => {
    const routes = [
      r('POST', '/v1/records/lookup', { operationId: 'lookupRecords' }),
      r('GET', '/v1/records/lookup', { operationId: 'lookupRecords' }),
    ];
    expect(() => buildOpenApi(routes)).toThrow(
      /operationId 'lookupRecords' is used by both POST \/v1\/records\/lookup and GET \/v1\/records\/lookup/,
    );
    // Derived ids collide too: the route has to name itself.
    expect(() => buildOpenApi([r('GET', '/v1/things/:id'), r('GET', '/v1/things/:thingId')])).toThrow(
      /operationId 'getThing'/,
    );
  });
});

describe('/openapi.json responses and tags', () => {
  it('derives the error statuses from the route', () => {
    expect(errorStatusesOf(r('GET', '/v1/records'))).toEqual([400, 401, 403, 404, 429]);
    const patch = r('PATCH', '/v1/records/:id', {
      body: z.object({ expectedVersion: z.number().optional() }),
      params: z.object({ id: z.string() }),
      write: true,
    });
    expect(errorStatusesOf(patch)).toEqual([400, 401, 402, 403, 404, 409, 413, 415, 429]);
    expect(
      errorStatusesOf(
        route({ method: 'GET', url: '/healthz', auth: 'none', summary: 'Liveness', handler: async () => ({}) }),
      ),
    ).toEqual([429]);
    expect(errorStatusesOf(r('POST', '/v1/records/lookup/batch', { errors: [501] }))).toContain(501);
  });

  it(
    'every operation has an id, a tag, a 4xx response with the error body and the default error; servers ' +
      'from the public URL',
    () => {
      const doc = buildOpenApi([r('GET', '/v1/records'), r('DELETE', '/v1/records/:id', { status: 204 })], {
        publicUrl: 'https://api.example.org/',
      });
      expect(doc.servers).toEqual([{ url: 'https://api.example.org', description: expect.any(String) }]);
      const op = doc.paths['/v1/records/{id}'].delete as {
        operationId: string;
        tags: string[];
        responses: Record<string, unknown>;
        parameters: Array<{ name: string; in: string }>;
      };
      expect(op.operationId).toBe('deleteRecord');
      expect(op.tags).toEqual(['Records']);
      expect(op.responses['404']).toEqual({ $ref: '#/components/responses/NotFound' });
      expect(op.responses.default).toEqual({ $ref: '#/components/responses/Error' });
      // A path parameter without a params schema is still declared.
      expect(op.parameters).toContainEqual(expect.objectContaining({ name: 'id', in: 'path', required: true }));
      expect((doc.components.responses as Record<string, { content: unknown }>).NotFound.content).toEqual({
        'application/json': { schema: { $ref: '#/components/schemas/Error' } },
      });
      expect(doc.tags.map((t) => t.name)).toEqual(['Records']);
      expect(doc.info.license).toBeDefined();
    },
  );

  it("a route's own error statuses get shared responses too, named or from the error catalogue", () => {
    const doc = buildOpenApi([r('POST', '/v1/scripts/execute', { body: z.object({}), errors: [422, 504, 418] })]);
    const op = doc.paths['/v1/scripts/execute'].post as { responses: Record<string, unknown> };
    expect(op.responses['422']).toEqual({ $ref: '#/components/responses/UnprocessableContent' });
    expect(op.responses['504']).toEqual({ $ref: '#/components/responses/GatewayTimeout' });
    expect(op.responses['418']).toEqual({ $ref: '#/components/responses/Status418' });
    expect(Object.keys(doc.components.responses)).toEqual(
      expect.arrayContaining(['UnprocessableContent', 'GatewayTimeout', 'Status418', 'Error']),
    );
  });

  it('a stream is text/event-stream, one schema per event name', () => {
    const doc = buildOpenApi([
      r('POST', '/v1/chat', {
        operationId: 'chat',
        stream: { content_delta: z.object({ delta: z.string() }), done: z.object({ outputTokens: z.number() }) },
      }),
    ]);
    const ok = (doc.paths['/v1/chat'].post as { responses: Record<string, { content: Record<string, unknown> }> })
      .responses['200'];
    expect(Object.keys(ok.content)).toEqual(['text/event-stream']);
    const schemas = doc.components.schemas as Record<
      string,
      { oneOf?: unknown[]; properties?: Record<string, unknown> }
    >;
    expect(schemas.ChatEvent.oneOf).toEqual([
      { $ref: '#/components/schemas/ContentDeltaEvent' },
      { $ref: '#/components/schemas/DoneEvent' },
    ]);
    expect(schemas.ContentDeltaEvent.properties!.event).toEqual({ const: 'content_delta' });
  });

  it.each([
    ['/v1/records/lookup', 'Records'],
    ['/v1/documents/:id/ask', 'Inference'],
    ['/v1/rag', 'Inference'],
    ['/v1/users/:id', 'Identity'],
    ['/v1/trigger-failures', 'Triggers'],
    ['/v1/scripts/execute', 'Scripts'],
    ['/developer/webhooks/:id', 'Webhooks'],
    ['/developer/keys', 'Developer'],
    ['/operator/accounts', 'Operator'],
    ['/healthz', 'System'],
  ])('%s is tagged %s', (url, tag) => expect(tagOf(url)).toBe(tag));
});
