import { z } from 'zod';
import { ERROR_CATALOGUE, errorBody, type RouteSpec, WEBHOOK_API_VERSION, WEBHOOK_EVENT_TYPES } from '@svc/contracts';
import { drawsCredits, isInference } from '@svc/command-api';

/**
 * `/openapi.json`: OpenAPI 3.1 built from the same zod schemas that validate
 * requests (docs/api.md "API description"). It passes `redocly lint` with the
 * recommended rules (tests/src/contracts/openapi-lint.spec.ts) and is the
 * source of the typed client: every operation has a unique `operationId` (the
 * route's, else derived from method and path), its error statuses with the error
 * body, a tag per area; streams are `text/event-stream` with their event schemas.
 */
export interface OpenApiOptions {
  /** The service's public base URL (PUBLIC_URL), the description's one server. */
  publicUrl?: string;
  /** The API version written into `info.version`. */
  version?: string;
}

type Json = Record<string, unknown>;

const strip = (js: Json): Json => {
  const { $schema: _drop, ...rest } = js;
  return rest;
};
const requestSchema = (s: z.ZodTypeAny) => strip(z.toJSONSchema(s, { io: 'input', unrepresentable: 'any' }) as Json);
const responseSchema = (s: z.ZodTypeAny) => strip(z.toJSONSchema(s, { io: 'output', unrepresentable: 'any' }) as Json);

/** Words of a path segment: `download-url` -> Download, Url. */
const pascal = (s: string) =>
  s
    .split(/[^A-Za-z0-9]+/)
    .filter(Boolean)
    .map((w) => w[0].toUpperCase() + w.slice(1))
    .join('');
const singular = (w: string) =>
  /ies$/.test(w) ? w.replace(/ies$/, 'y') : /(ss|us)$/.test(w) ? w : w.replace(/s$/, '');
const isParam = (seg: string) => seg.startsWith(':') || seg.startsWith('{');

/**
 * Leading path segments that name a plane, not a resource (the operator plane stays in the name: verifyOperatorDomain).
 */
const PREFIXES = new Set(['v1', 'developer', 'operator']);

/**
 * The operation id a route gets when it declares none: a verb from the method
 * and the path's resources, camel-case (GET /v1/records -> listRecords,
 * GET /v1/records/:id -> getRecord, PATCH -> patchRecord, GET
 * /v1/documents/:id/text -> getDocumentText, POST /v1/scripts/execute ->
 * executeScript, POST /developer/webhooks/:id/deliveries/:deliveryId/retry ->
 * retryWebhookDelivery). Stable: it changes only when the path does.
 */
export function operationIdOf(r: Pick<RouteSpec, 'method' | 'url' | 'operationId'>): string {
  if (r.operationId) return r.operationId;
  const segs = r.url.split('/').filter(Boolean);
  const plane = segs[0] === 'operator' ? 'Operator' : '';
  while (segs.length > 1 && PREFIXES.has(segs[0])) segs.shift();
  const endsWithParam = isParam(segs[segs.length - 1]);
  // A trailing static segment after another resource, on a POST, is an action: the verb.
  let verb: string | undefined;
  if (r.method === 'POST' && !endsWithParam && segs.length > 1) verb = segs.pop()!;
  const words: string[] = [];
  segs.forEach((seg, i) => {
    if (isParam(seg)) return;
    const next = segs[i + 1];
    const last = i === segs.length - 1;
    // A collection followed by its id, or the object of a create or an action, is one item.
    const one = (next !== undefined && isParam(next)) || (last && (verb !== undefined || r.method === 'POST'));
    words.push(pascal(one ? singular(seg) : seg));
  });
  const lastSeg = segs[segs.length - 1] ?? '';
  const v =
    verb !== undefined
      ? verb.replace(/-([a-z])/g, (_m, c: string) => c.toUpperCase())
      : r.method === 'GET'
        ? endsWithParam || !/s$/.test(lastSeg)
          ? 'get'
          : 'list'
        : ({ POST: 'create', PUT: 'update', PATCH: 'patch', DELETE: 'delete' } as const)[r.method];
  return v + plane + words.join('');
}

/**
 * The area of a path, as its tag: the first resource segment (GET /v1/records/lookup -> Records), with a few named
 * groups.
 */
const TAG_GROUPS: Array<[RegExp, string]> = [
  [/^\/v1\/(rag|chat|models)(\/|$)|^\/v1\/documents\/[^/]+\/ask$/, 'Inference'],
  [/^\/v1\/(namespaces|users|entities)(\/|$)/, 'Identity'],
  [/^\/v1\/(tokens|contexts|ping)(\/|$)/, 'Tenancy'],
  [/^\/v1\/trigger/, 'Triggers'],
  [/^\/v1\/admin\/logs/, 'Activity log'],
  [/^\/v1\/erasure-requests/, 'Erasure'],
  [/^\/developer\/webhooks/, 'Webhooks'],
  [/^\/developer\//, 'Developer'],
  [/^\/operator\//, 'Operator'],
  [/^\/(healthz|readyz|metrics|openapi\.json)$/, 'System'],
];
const TAG_DESCRIPTIONS: Record<string, string> = {
  Schemas: 'Schemas govern records, documents, users and entities: fields, lookups, capabilities, version history.',
  Records:
    'Schema-governed structured records: create, read, replace, merge-patch, delete, lookups, batches, ' +
    'history and tombstones.',
  Documents: 'Documents from inline text or a presigned file upload: retained text, download URLs, lookups, history.',
  Folders: 'Folders group records and documents under the context root.',
  Search: 'Content search over documents and records: TEXT, SEMANTIC or HYBRID.',
  Changes:
    'The change stream (Server-Sent Events): record, document and folder changes the caller can read, ' +
    'resumable by log position.',
  Inference: 'Streaming inference (Server-Sent Events): RAG, document ask, chat; the model catalog.',
  Identity: 'Namespaces, users and identity entities.',
  Tenancy: 'Minted tokens, app contexts and the credential check (ping).',
  Scripts: 'Stored, versioned scripts and their synchronous execution.',
  Triggers: 'Trigger rules that run scripts on record events, and their terminal failures.',
  Usage: 'The usage report of a period: credits, searches, inference, reads, execution.',
  'Activity log': 'One entry per /v1 request of the tenant.',
  Export: 'Audit export of the stored events (NDJSON).',
  Erasure: 'Reserved per-subject erasure contract (not implemented).',
  Webhooks: 'Signed webhooks of the developer portal: registrations and deliveries.',
  Developer: 'Developer portal: scoped keys, root-key rotation, domains, tenant teardown.',
  Operator:
    'Operator API (OPERATOR_TOKEN): accounts, domains, projection quarantine, online rebuilds of the read models.',
  System: 'Liveness, readiness, metrics and this description (no authentication).',
};
export function tagOf(url: string): string {
  const path = url.replace(/:([A-Za-z]+)/g, '{$1}');
  for (const [re, tag] of TAG_GROUPS) if (re.test(path)) return tag;
  const seg =
    path
      .split('/')
      .filter(Boolean)
      .find((s) => !PREFIXES.has(s)) ?? 'System';
  const words = seg.split('-');
  return [words[0][0].toUpperCase() + words[0].slice(1), ...words.slice(1)].join('-');
}

/** What a 429 says and the headers it carries (the burst limit's and the edge ceiling's). */
const RATE_LIMITED_DESCRIPTION =
  'Rate limited (RATE_LIMITED): the per-account burst limit of the plan (writes, searches, inference), or ' +
  'the edge per-IP flood ceiling (any request; no requestId). Retry after `Retry-After` seconds.';
const integerHeader = (description: string) => ({ description, schema: { type: 'integer' } });
const RATE_LIMITED_HEADERS = {
  'Retry-After': integerHeader('Seconds until the window resets.'),
  'X-RateLimit-Limit': integerHeader('The plan maximum per minute (burst limit only).'),
  'X-RateLimit-Remaining': integerHeader('Counted requests left in the window: 0 on a 429 (burst limit only).'),
};

/** The shared error responses (components/responses), by status. */
const ERROR_RESPONSES: Record<string, { name: string; description: string; headers?: Json }> = {
  '400': {
    name: 'BadRequest',
    description: 'The request is invalid (body, path or query; an unsupported Service-Version); nothing changed.',
  },
  '401': { name: 'Unauthorized', description: 'Missing or invalid credentials.' },
  '402': {
    name: 'PaymentRequired',
    description: 'The monthly credit ceiling is reached, or the inference balance is exhausted (INSUFFICIENT_BALANCE).',
  },
  '403': {
    name: 'Forbidden',
    description: 'The credential lacks the permission (uniform; the permission is not named) or is of the wrong kind.',
  },
  '404': {
    name: 'NotFound',
    description: 'Not found: missing, in another tenant and out of scope read the same; also an unknown X-Context-Id.',
  },
  '409': {
    name: 'Conflict',
    description:
      'Conflict: `expectedVersion` does not match (VERSION_CONFLICT), a concurrent write (retry), or the ' +
      'current state forbids it (CONFLICT).',
  },
  '413': { name: 'PayloadTooLarge', description: 'The request (or the input it makes) is too large.' },
  '429': { name: 'TooManyRequests', description: RATE_LIMITED_DESCRIPTION, headers: RATE_LIMITED_HEADERS },
  '415': {
    name: 'UnsupportedMediaType',
    description: 'The body is not JSON (application/json or application/merge-patch+json).',
  },
  '422': {
    name: 'UnprocessableContent',
    description: 'The request cannot be processed as sent (e.g. IDEMPOTENCY_KEY_REUSED).',
  },
  '500': {
    name: 'InternalError',
    description: 'An internal error (the body also carries `correlationId`), or an outcome that cannot be determined.',
  },
  '501': {
    name: 'NotImplemented',
    description: 'Reserved and not implemented: the body is `{"error": "not_implemented"}`.',
  },
  '503': {
    name: 'ServiceUnavailable',
    description: 'Temporarily unavailable (e.g. `requireComplete` with a degraded search leg); retry later.',
  },
  '504': {
    name: 'GatewayTimeout',
    description: 'The operation timed out (e.g. a script over its wall clock, TIMEOUT).',
  },
};
/** A status without a named entry above still gets one, with the catalogue's messages for it. */
const errorResponseOf = (status: string) => {
  const known = ERROR_RESPONSES[status];
  if (known) return known;
  const messages = Object.entries(ERROR_CATALOGUE)
    .filter(([, e]) => String(e.status) === status)
    .map(([code, e]) => `${code}: ${e.message}`);
  return (ERROR_RESPONSES[status] = {
    name: `Status${status}`,
    description: messages.length ? messages.join(' ') : `HTTP ${status}.`,
  });
};
const GENERIC_ERROR = 'Error';

const hasProperty = (s: z.ZodTypeAny | undefined, name: string) => {
  if (!s) return false;
  const js = z.toJSONSchema(s, { io: 'input', unrepresentable: 'any' }) as { properties?: Record<string, unknown> };
  return !!js.properties && name in js.properties;
};

/** The error statuses of a route: derived from what the edge and the route do, plus the route's own `errors`. */
export function errorStatusesOf(r: RouteSpec): number[] {
  const s = new Set<number>(r.errors ?? []);
  if (r.body || r.query || r.params || r.url.startsWith('/v1/')) s.add(400);
  if (r.auth !== 'none') s.add(401);
  if (r.auth === 'data' || r.auth === 'developer') s.add(403);
  // Ids in the path; the operator API when OPERATOR_TOKEN is unset; an unknown X-Context-Id on the data plane.
  if (r.params || /:[A-Za-z]/.test(r.url) || r.auth === 'operator' || r.auth === 'data') s.add(404);
  if (r.write || hasProperty(r.body, 'expectedVersion')) s.add(409);
  if (r.body) s.add(413);
  // A body in another media type than JSON (application/json, or merge-patch+json on PATCH).
  if (r.body) s.add(415);
  if (r.auth === 'data' && (drawsCredits(r) || isInference(r))) s.add(402);
  // The per-account burst limit (counted routes), and the edge's per-IP flood ceiling (every route).
  s.add(429);
  const own = r.status ?? 200;
  s.delete(own);
  return [...s].sort((a, b) => a - b);
}

export function buildOpenApi(routes: RouteSpec[], opts: OpenApiOptions = {}) {
  const paths: Record<string, Record<string, unknown>> = {};
  const schemas: Record<string, unknown> = {
    [GENERIC_ERROR]: responseSchema(errorBody),
    NotImplemented: { type: 'object', properties: { error: { const: 'not_implemented' } }, required: ['error'] },
  };
  const usedResponses = new Set<string>();
  const ids = new Map<string, string>();
  const tags = new Set<string>();
  const ref = (status: string) => {
    usedResponses.add(status);
    return { $ref: `#/components/responses/${errorResponseOf(status).name}` };
  };

  for (const r of routes) {
    const path = r.url.replace(/:([A-Za-z]+)/g, '{$1}');
    const operationId = operationIdOf(r);
    const at = `${r.method} ${r.url}`;
    const other = ids.get(operationId);
    if (other)
      throw new Error(
        `/openapi.json: operationId '${operationId}' is used by both ${other} and ${at}: give one of them ` +
          `an operationId of its own (RouteSpec.operationId)`,
      );
    ids.set(operationId, at);

    const parameters: Array<Record<string, unknown>> = [];
    for (const [where, schema] of [
      ['path', r.params],
      ['query', r.query],
    ] as const) {
      if (!schema) continue;
      const js = requestSchema(schema) as { properties?: Record<string, Json>; required?: string[] };
      for (const [name, s] of Object.entries(js.properties ?? {})) {
        const { description, ...rest } = s as Json;
        parameters.push({
          name,
          in: where,
          required: where === 'path' || (js.required ?? []).includes(name),
          ...(description ? { description } : {}),
          schema: rest,
        });
      }
    }
    // A path parameter the route validates no schema for is still a (string) parameter.
    for (const m of path.matchAll(/\{([A-Za-z]+)\}/g))
      if (!parameters.some((p) => p.in === 'path' && p.name === m[1]))
        parameters.push({ name: m[1], in: 'path', required: true, schema: { type: 'string' } });

    const tag = tagOf(r.url);
    tags.add(tag);
    const status = String(r.status ?? 200);
    const responses: Record<string, unknown> = {};
    if (r.stream) {
      const refs: Json[] = [];
      const mapping: Record<string, string> = {};
      for (const [event, data] of Object.entries(r.stream)) {
        const name = `${pascal(event)}Event`;
        const js = {
          type: 'object',
          description: `\`event: ${event}\``,
          properties: { event: { const: event }, data: responseSchema(data) },
          required: ['event', 'data'],
        };
        const known = schemas[name];
        if (known && JSON.stringify(known) !== JSON.stringify(js))
          throw new Error(
            `/openapi.json: stream event '${event}' of ${at} has another schema than the same event elsewhere`,
          );
        schemas[name] = js;
        refs.push({ $ref: `#/components/schemas/${name}` });
        mapping[event] = `#/components/schemas/${name}`;
      }
      const unionName = `${pascal(operationId)}Event`;
      schemas[unionName] = { oneOf: refs, discriminator: { propertyName: 'event', mapping } };
      responses[status] = {
        description:
          r.streamDescription ??
          `A Server-Sent Events stream: one \`event: <name>\` and one \`data: <JSON>\` line a frame, in ` +
            `this order: ${Object.keys(r.stream).join(', ')} (exactly one \`done\` ends it, or an ` +
            `\`error\`). The schema is that of one frame.`,
        content: { 'text/event-stream': { schema: { $ref: `#/components/schemas/${unionName}` } } },
      };
    } else if (Number(status) >= 400) {
      // A reserved stub (erasure): its "answer" is the error.
      responses[status] = ref(status);
    } else if (status === '204') {
      responses[status] = { description: 'No content' };
    } else if (r.contentType) {
      responses[status] = {
        description: 'Success',
        content: { [r.contentType]: { schema: r.response ? responseSchema(r.response) : { type: 'string' } } },
      };
    } else {
      responses[status] = {
        description: 'Success',
        content: { 'application/json': { schema: r.response ? responseSchema(r.response) : {} } },
      };
    }
    for (const other of r.statuses ?? []) responses[String(other)] = responses[status];
    for (const e of errorStatusesOf(r)) if (e >= 400 && e < 600) responses[String(e)] = ref(String(e));
    responses.default = { $ref: `#/components/responses/${GENERIC_ERROR}` };

    (paths[path] ??= {})[r.method.toLowerCase()] = {
      operationId,
      summary: r.summary,
      tags: [tag],
      ...(r.permission ? { 'x-permission': r.permission } : {}),
      security: r.auth === 'none' ? [] : [{ [SECURITY[r.auth]]: [] }],
      parameters,
      ...(r.body
        ? {
            requestBody: {
              required: true,
              content: Object.fromEntries(
                (r.method === 'PATCH'
                  ? ['application/json', 'application/merge-patch+json']
                  : ['application/json']
                ).map((t) => [t, { schema: requestSchema(r.body!) }]),
              ),
            },
          }
        : {}),
      responses,
    };
  }

  const errorContent = { 'application/json': { schema: { $ref: `#/components/schemas/${GENERIC_ERROR}` } } };
  const requestIdHeader = {
    'X-Request-Id': { description: 'The request id (also the error body `requestId`).', schema: { type: 'string' } },
  };
  const responses: Record<string, unknown> = {
    [GENERIC_ERROR]: {
      description: 'Error: the error body `{message, errorCode, requestId}` (branch on `errorCode`).',
      headers: requestIdHeader,
      content: errorContent,
    },
  };
  for (const status of [...usedResponses].sort()) {
    const e = errorResponseOf(status);
    responses[e.name] = {
      description: e.description,
      headers: { ...requestIdHeader, ...(e.headers ?? {}) },
      content:
        status === '501'
          ? { 'application/json': { schema: { $ref: '#/components/schemas/NotImplemented' } } }
          : errorContent,
    };
  }

  return {
    openapi: '3.1.0',
    info: {
      title: 'Data, Document, Search and Inference Service',
      version: opts.version ?? '0.45.0',
      description:
        'Multi-tenant back-end: schema-governed records, documents, folders, content search, streaming ' +
        'inference, scripts and signed webhooks. Errors carry `{message, errorCode, requestId}`; lists are ' +
        '`{data, nextCursor}` (send `nextCursor` back as `startFrom`). Every `/v1` request may pin a ' +
        'response shape with the `Service-Version` header.',
      license: { name: 'Proprietary', identifier: 'LicenseRef-Proprietary' },
    },
    servers: [
      {
        url: (opts.publicUrl ?? 'http://127.0.0.1:8080').replace(/\/+$/, ''),
        description: 'This service (PUBLIC_URL)',
      },
    ],
    tags: [...tags]
      .sort()
      .map((name) => ({ name, ...(TAG_DESCRIPTIONS[name] ? { description: TAG_DESCRIPTIONS[name] } : {}) })),
    components: {
      securitySchemes: {
        apiKey: {
          type: 'http',
          scheme: 'bearer',
          description: 'Data plane: a root key (sk_live_ / sk_test_), a scoped key (ssk_) or a minted token (st_).',
        },
        developerToken: { type: 'http', scheme: 'bearer', description: 'Developer portal: a developer token (dt_).' },
        operatorToken: { type: 'http', scheme: 'bearer', description: 'Operator API: OPERATOR_TOKEN.' },
      },
      schemas,
      responses,
    },
    paths,
    webhooks: webhookDescription(schemas),
  };
}

/**
 * The webhook deliveries (OpenAPI 3.1 `webhooks`; spec "Events"): the envelope per
 * event type and the signature headers, for receivers and the client's
 * verifySignature. `data` as the spec lists it; `trigger.failed` mirrors a
 * trigger-failure record (GET /v1/trigger-failures).
 */
const indexFailure = z
  .object({ code: z.string(), message: z.string() })
  .describe('Present on failures when a classification was recorded');
const ownership = { userId: z.string().optional(), scopes: z.array(z.string()).optional() };
const recordData = z.object({
  id: z.string(),
  typeName: z.string(),
  indexStatus: z.string(),
  ...ownership,
  indexFailure: indexFailure.optional(),
});
const documentData = z.object({
  id: z.string(),
  status: z.string(),
  indexMode: z.string(),
  ...ownership,
  folderId: z.string().optional(),
  indexFailure: indexFailure.optional(),
});
const WEBHOOK_DATA: Record<(typeof WEBHOOK_EVENT_TYPES)[number], z.ZodTypeAny> = {
  'document.indexed': documentData,
  'document.failed': documentData,
  'record.indexed': recordData,
  'record.failed': recordData,
  'trigger.failed': z
    .record(z.string(), z.unknown())
    .describe('Mirrors a trigger-failure record (GET /v1/trigger-failures)'),
};

function webhookDescription(schemas: Record<string, unknown>) {
  const mapping: Record<string, string> = {};
  for (const type of WEBHOOK_EVENT_TYPES) {
    const name = `${pascal(type)}Webhook`;
    schemas[name] = {
      type: 'object',
      description: `The envelope of a \`${type}\` delivery.`,
      properties: {
        id: {
          type: 'string',
          description: 'Delivery id; equals the X-Service-Delivery header (dedupe on it: delivery is at-least-once).',
        },
        version: { type: 'string', description: `Envelope version, currently ${WEBHOOK_API_VERSION}.` },
        type: { const: type },
        created: { type: 'integer', description: 'Unix seconds at envelope build time.' },
        tenantId: { type: 'string' },
        livemode: { type: 'boolean', description: 'true for the live tenant, false for test.' },
        data: responseSchema(WEBHOOK_DATA[type]),
      },
      required: ['id', 'version', 'type', 'created', 'tenantId', 'livemode', 'data'],
    };
    mapping[type] = `#/components/schemas/${name}`;
  }
  schemas.WebhookEnvelope = {
    oneOf: Object.values(mapping).map(($ref) => ({ $ref })),
    discriminator: { propertyName: 'type', mapping },
  };
  const header = (name: string, description: string) => ({
    name,
    in: 'header',
    required: true,
    description,
    schema: { type: 'string' },
  });
  return {
    delivery: {
      post: {
        operationId: 'receiveWebhookDelivery',
        summary: 'A signed webhook delivery, POSTed to a registered https endpoint (developer portal webhooks)',
        description:
          'Verify before trusting: HMAC-SHA256, keyed by the hex-decoded secret, over ' +
          '`<X-Service-Timestamp>.<raw body>`, hex, prefixed `sha256=`; compare in constant time; refuse a ' +
          'timestamp more than 300 s from now (the client: `verifySignature(rawBody, headers, secret)`).',
        tags: ['Webhooks'],
        security: [],
        parameters: [
          header('X-Service-Delivery', 'The delivery id (the envelope `id`).'),
          header('X-Service-Timestamp', 'Unix seconds at signing time (re-signed on every attempt).'),
          header('X-Service-Signature', '`sha256=<hex>`.'),
        ],
        requestBody: {
          required: true,
          content: { 'application/json': { schema: { $ref: '#/components/schemas/WebhookEnvelope' } } },
        },
        responses: {
          '2XX': { description: 'Delivered: answer promptly (response timeout 30 s).' },
          '4XX': {
            description:
              'A failed attempt (as is any non-2xx answer or a timeout): retried after 30 s, 5 min, 30 ' +
              'min, 2 h, 8 h, then FAILED.',
          },
        },
      },
    },
  };
}

const SECURITY: Record<Exclude<RouteSpec['auth'], 'none'>, string> = {
  data: 'apiKey',
  developer: 'developerToken',
  operator: 'operatorToken',
};
