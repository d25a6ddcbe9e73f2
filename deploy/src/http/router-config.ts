import { ERROR_CATALOGUE, type ErrorCode } from '@svc/contracts';
import { type CataloguedRoute, type RoutedRole, routeCatalogue } from './catalogue';
import { DOCS_BUNDLE_PATH, DOCS_PATH } from './docs-page';
import { CONSOLE_ASSET_PATH, CONSOLE_PATH } from './console-page';
import { MAX_BODY_BYTES } from './edge';
import { REQUEST_ID_PATTERN } from './request-id';

/** Where the shipped router configuration lives (compose and Kubernetes both mount it). */
export const ROUTER_CONFIG_PATH = 'deploy/k8s/router.nginx.conf';

/** A route's path as a PCRE on nginx's `$request_uri` (raw, with its query string): `:id` is one segment. */
export function pathPattern(url: string): string {
  const body = url
    .split('/')
    .map((s) => (s.startsWith(':') ? '[^/?]+' : s.replace(/[.*+?^$()|[\]\\{}]/g, '\\$&')))
    .join('/');
  return `${body}(\\?.*)?$`;
}

/**
 * The map's key for a route: `METHOD /path...` (HEAD goes where GET goes: fastify answers HEAD for every GET route).
 */
const methodsOf = (m: CataloguedRoute['method']) => (m === 'GET' ? '(GET|HEAD)' : m);
const literalsOf = (url: string) => url.split('/').filter((s) => s && !s.startsWith(':')).length;

/**
 * The routing table: one regex per route, most literal segments first, so `/v1/records/lookup` is tried
 * before `/v1/records/:id` (nginx takes the first regex that matches, in the order written).
 */
export function routingTable(
  catalogue: CataloguedRoute[] = routeCatalogue(),
): Array<{ pattern: string; role: RoutedRole; route: string }> {
  const seen = new Set<string>();
  const rows: Array<{ pattern: string; role: RoutedRole; route: string; literals: number }> = [];
  for (const r of catalogue) {
    const key = `${r.method} ${r.url}`;
    if (seen.has(key)) continue;
    seen.add(key);
    rows.push({
      pattern: `^${methodsOf(r.method)} ${pathPattern(r.url)}`,
      role: r.role,
      route: key,
      literals: literalsOf(r.url),
    });
  }
  // Served by every role, outside the catalogue (not operations of the API): the description, its reference page and
  // the web console.
  for (const url of ['/openapi.json', DOCS_PATH, DOCS_BUNDLE_PATH, CONSOLE_PATH, CONSOLE_ASSET_PATH])
    rows.push({
      pattern: `^(GET|HEAD) ${pathPattern(url)}`,
      role: 'query',
      route: `GET ${url}`,
      literals: literalsOf(url),
    });
  return rows
    .sort((a, b) => b.literals - a.literals || a.route.localeCompare(b.route))
    .map(({ pattern, role, route }) => ({ pattern, role, route }));
}

/** The role a request goes to, by the same rules as the generated map (for tests and for anyone asking). */
export function roleOf(method: string, requestUri: string, table = routingTable()): RoutedRole {
  const key = `${method} ${requestUri}`;
  return table.find((r) => new RegExp(r.pattern).test(key))?.role ?? 'command';
}

/**
 * The router's own refusals, answered in the service's error body: nginx answers these before (or instead of)
 * a role, so without them a client would get nginx's HTML. `$svc_request_id` is the request's id (the
 * client's valid X-Request-Id, else the router's), also sent to the role as X-Request-Id.
 */
const ROUTER_ERRORS: Array<{
  name: string;
  statuses: number[];
  status: number;
  code: ErrorCode;
  message: string;
  retryAfter?: boolean;
}> = [
  { name: 'bad_request', statuses: [400], status: 400, code: 'BAD_HTTP', message: ERROR_CATALOGUE.BAD_HTTP.message },
  { name: 'not_found', statuses: [404], status: 404, code: 'NOT_FOUND', message: ERROR_CATALOGUE.NOT_FOUND.message },
  {
    name: 'too_large',
    statuses: [413],
    status: 413,
    code: 'PAYLOAD_TOO_LARGE',
    message: ERROR_CATALOGUE.PAYLOAD_TOO_LARGE.message,
  },
  // nginx says 414 for a request line and 494 for a header over its buffers; the service says 431 for both.
  {
    name: 'headers_too_large',
    statuses: [414, 494],
    status: 431,
    code: 'HEADERS_TOO_LARGE',
    message: ERROR_CATALOGUE.HEADERS_TOO_LARGE.message,
  },
  { name: 'internal', statuses: [500], status: 500, code: 'INTERNAL', message: ERROR_CATALOGUE.INTERNAL.message },
  // No role process answered (none running, refused, reset, timed out): a write may be retried after the pause.
  {
    name: 'unavailable',
    statuses: [502, 503, 504],
    status: 503,
    code: 'UNAVAILABLE',
    message: ERROR_CATALOGUE.UNAVAILABLE.message,
    retryAfter: true,
  },
];

const ROLE_STATUS: Record<Exclude<RoutedRole, 'command'>, number> = { query: 418, projector: 419 };

const proxyBlock = (upstream: RoutedRole, indent: string) =>
  [
    `proxy_pass http://${upstream};`,
    // Each role is tried once more on another replica when it could not answer at all. The query role's
    // routes only read, so any of them is retried (POST /v1/search too); a write is retried only when it
    // never reached a process (nginx's default: idempotent methods only). Never on a 503: that is an answer
    // (a degraded search with requireComplete, a script that could not start), and nginx would also count it
    // as the replica failing and stop sending it requests for a while.
    upstream === 'command' ? 'proxy_next_upstream error timeout;' : 'proxy_next_upstream error timeout non_idempotent;',
    'proxy_next_upstream_tries 2;',
  ]
    .map((l) => indent + l)
    .join('\n');

/** The nginx configuration (an `http`-context file: upstreams, the routing map, the server) of the split deployment. */
export function routerConfig(catalogue: CataloguedRoute[] = routeCatalogue()): string {
  const table = routingTable(catalogue);
  const width = Math.max(...table.map((r) => r.pattern.length)) + 4;
  // URI error pages, not named locations: nginx answers a request it could not parse (a bad URI, one too long) with an
  // error page before any location is chosen, and a named location cannot serve those (nginx answers its own 500).
  const errorPages = ROUTER_ERRORS.map((e) => `error_page ${e.statuses.join(' ')} = /.svc-router-errors/${e.name};`);
  const lines = [
    '# GENERATED from the route catalogue by `npm run router` (deploy/src/http/router-config.ts); do not edit by hand:',
    '# a CI test fails when this file differs from what the catalogue gives. Change only the upstream addresses.',
    '#',
    '# The router of the split deployment (deploy/compose.yaml, deploy/k8s/router.yaml): each request goes to the',
    '# role that serves its route (the write API and presigned storage to command, the read API, search and',
    "# inference to query, the quarantine commands to projector). Its own refusals answer in the service's",
    "# JSON error body. Roles behind it trust one proxy hop (TRUST_PROXY_HOPS=1) for the client's address.",
    'upstream command   { server command:8080;   keepalive 32; }',
    'upstream query     { server query:8080;     keepalive 32; }',
    'upstream projector { server projector:8080; keepalive 4; }',
    '',
    '# A CORS preflight (OPTIONS) names no route: it goes to the default role; every role answers preflights alike,',
    "# from its own CORS_ORIGINS. The roles' CORS headers pass through; the router's own refusals below carry none.",
    'map "$request_method $request_uri" $svc_role {',
    `  ${'default'.padEnd(width)}command;`,
    ...table.filter((r) => r.role !== 'command').map((r) => `  ${`"~${r.pattern}"`.padEnd(width)}${r.role};`),
    '}',
    '',
    "# The request's id: the client's X-Request-Id when it is a valid one (1-128 of [A-Za-z0-9._:-]), " +
      "else the router's own.",
    'map $http_x_request_id $svc_request_id {',
    `  "~${REQUEST_ID_PATTERN}" $http_x_request_id;`,
    '  default $request_id;',
    '}',
    '',
    'server {',
    '  listen 8080;',
    `  # JSON bodies: the service's own limit (${MAX_BODY_BYTES / 1024 / 1024} MiB), so an oversize body ` +
      `is refused here, before it is streamed.`,
    `  client_max_body_size ${MAX_BODY_BYTES / 1024 / 1024}m;`,
    '  # Request lines and headers up to the size the service itself answers (431 past 16 KB).',
    '  large_client_header_buffers 4 32k;',
    '  proxy_http_version 1.1;',
    '  proxy_set_header Connection "";',
    '  proxy_set_header Host $http_host;',
    '  proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;',
    '  proxy_set_header X-Forwarded-Proto $scheme;',
    '  proxy_set_header X-Request-Id $svc_request_id;',
    '  proxy_request_buffering off;',
    '  proxy_buffering off;',
    '  proxy_connect_timeout 5s;',
    '  proxy_read_timeout 300s;',
    '  recursive_error_pages on;',
    ...errorPages.map((l) => `  ${l}`),
    '',
    '  location / {',
    ...Object.entries(ROLE_STATUS).map(([role, status]) => `    error_page ${status} = @${role};`),
    ...errorPages.map((l) => `    ${l}`),
    ...Object.entries(ROLE_STATUS).map(([role, status]) => `    if ($svc_role = ${role}) { return ${status}; }`),
    proxyBlock('command', '    '),
    '  }',
    '  # Presigned uploads stream files to the command role; the storage endpoint applies the file limit itself.',
    '  location /storage/ {',
    '    client_max_body_size 0;',
    proxyBlock('command', '    '),
    '  }',
    ...(['query', 'projector'] as const).flatMap((role) => [`  location @${role} {`, proxyBlock(role, '    '), '  }']),
    "  # Metrics stay inside the cluster: scrape each process's /metrics directly.",
    '  location = /metrics { return 404; }',
    ...ROUTER_ERRORS.flatMap((e) => [
      `  location = /.svc-router-errors/${e.name} {`,
      '    internal;',
      '    default_type application/json;',
      ...(e.retryAfter ? ['    add_header Retry-After 1 always;'] : []),
      '    add_header X-Request-Id $svc_request_id always;',
      `    return ${e.status} '{"message":"${e.message}","errorCode":"${e.code}","requestId":"$svc_request_id"}';`,
      '  }',
    ]),
    '}',
    '',
  ];
  return lines.join('\n');
}
