import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROLES } from '../service/roles';
import { routeCatalogue } from './catalogue';
import { ROUTER_CONFIG_PATH, roleOf, routerConfig, routingTable } from './router-config';

const ROOT = join(import.meta.dirname, '..', '..', '..');
/** A request path for a route: each `:param` filled with a plausible value. */
const sample = (url: string) =>
  url.replace(/:([A-Za-z]+)/g, (_m, name: string) => (name === 'domain' ? 'example.com' : `0b7c6f1e-${name}`));

describe('the shipped router (deploy/k8s/router.nginx.conf)', () => {
  it(
    'is exactly what the route catalogue generates: a route added or moved without `npm run router` fails ' + 'here',
    () => {
      expect(readFileSync(join(ROOT, ROUTER_CONFIG_PATH), 'utf8')).toBe(routerConfig());
    },
  );

  it(
    'sends every route of the catalogue to a role that serves it, with and without a query string, HEAD as ' + 'GET',
    () => {
      const table = routingTable();
      const wrong: string[] = [];
      for (const r of routeCatalogue()) {
        const path = sample(r.url);
        for (const [method, uri] of [
          [r.method, path],
          [r.method, `${path}?limit=5&x=%2F`],
          ...(r.method === 'GET' ? [['HEAD', path]] : []),
        ])
          if (roleOf(method, uri, table) !== r.role)
            wrong.push(`${method} ${uri} -> ${roleOf(method, uri, table)}, served by ${r.role}`);
      }
      expect(wrong).toEqual([]);
    },
  );

  it('knows the routes that once went to the wrong role: inference and the quarantine commands', () => {
    expect(roleOf('POST', '/v1/rag')).toBe('query');
    expect(roleOf('POST', '/v1/chat')).toBe('query');
    expect(roleOf('POST', '/v1/documents/abc/ask')).toBe('query');
    expect(roleOf('POST', '/operator/projections/quarantine/retry')).toBe('projector');
    // The online rebuild runs beside the projection runner it pauses.
    expect(roleOf('POST', '/operator/rebuilds')).toBe('projector');
    expect(roleOf('GET', '/operator/rebuilds/abc')).toBe('projector');
    // Writes on the paths of reads stay with the command role.
    expect(roleOf('PUT', '/v1/records/abc')).toBe('command');
    expect(roleOf('POST', '/v1/records/batch')).toBe('command');
    expect(roleOf('PUT', '/storage/uploads/abc?sig=1')).toBe('command');
  });

  it('sends a CORS preflight (OPTIONS, no route of its own) on any path to a role, which answers it itself', () => {
    // Whatever path it is for (a read of the query role included), the map's default role answers it.
    for (const uri of [
      '/v1/records',
      '/v1/records/abc?x=1',
      '/v1/rag',
      '/v1/search',
      '/operator/projections/quarantine/retry',
    ])
      expect(roleOf('OPTIONS', uri), uri).toBe('command');
    expect(routingTable().filter((r) => r.pattern.includes('OPTIONS'))).toEqual([]);
    const conf = routerConfig();
    // The roles' CORS headers pass through untouched: the router neither hides nor adds any.
    expect(conf).not.toMatch(/proxy_hide_header|access-control|proxy_intercept_errors/i);
  });

  it(
    "takes the client's X-Request-Id by the same rule as the service (1-128 of [A-Za-z0-9._:-]) and passes " + 'it on',
    () => {
      const conf = routerConfig();
      expect(conf).toContain('"~^[A-Za-z0-9._:-]{1,128}$" $http_x_request_id;');
      expect(conf).toContain('proxy_set_header X-Request-Id $svc_request_id;');
    },
  );

  it('routes to exactly the roles of the role table that serve routes', () => {
    const roles = new Set(routeCatalogue().map((r) => r.role));
    expect([...roles].sort()).toEqual(['command', 'projector', 'query']);
    expect(ROLES.command.serves).toContain('command');
    expect(ROLES.query.serves).toContain('query');
    expect(ROLES.projector.projectors).toBe(true);
  });

  it("answers its own refusals in the service's error body, and a missing process with 503 and Retry-After", () => {
    const conf = routerConfig();
    for (const code of ['BAD_HTTP', 'NOT_FOUND', 'PAYLOAD_TOO_LARGE', 'HEADERS_TOO_LARGE', 'INTERNAL', 'UNAVAILABLE'])
      expect(conf).toContain(`"errorCode":"${code}","requestId":"$svc_request_id"`);
    expect(conf).toMatch(/error_page 502 503 504 = \/\.svc-router-errors\/unavailable;/);
    expect(conf).toMatch(/add_header Retry-After 1 always;/);
  });
});
