import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { gzipSync } from 'node:zlib';
import { route, type RouteSpec } from '@svc/contracts';
import { addVary } from './cors';

/**
 * GET /docs: the API reference, rendered in the browser by Scalar from the served /openapi.json. The renderer's
 * prebuilt standalone bundle comes from npm (@scalar/api-reference) and is served by the service itself at
 * /docs/api-reference.js, so the page works offline and behind the router with nothing fetched elsewhere.
 */
export const DOCS_PATH = '/docs';
export const DOCS_BUNDLE_PATH = '/docs/api-reference.js';

// Scalar's options: no web fonts (they come from its CDN), no "open in the hosted client" button, no AI agent (a
// hosted service), no telemetry, no developer toolbar (shown on localhost), and every tag open so the page lists every
// operation without a click.
const CONFIGURATION = {
  withDefaultFonts: false,
  hideClientButton: true,
  agent: { disabled: true },
  defaultOpenAllTags: true,
  telemetry: false,
  showDeveloperTools: 'never',
};

// Relative URLs: the page resolves them against wherever it is served (a path prefix in front of the router too).
const PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>API reference</title>
</head>
<body>
<script id="api-reference" data-url="openapi.json" data-configuration='${JSON.stringify(CONFIGURATION)}'></script>
<script src="docs/api-reference.js"></script>
</body>
</html>
`;

/**
 * Nothing but the service itself: scripts, styles, fonts and fetches from its own origin (the renderer injects its
 * styles inline and draws icons as data: URLs). This is also what keeps the page offline if the renderer changes.
 */
export const DOCS_CSP =
  "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; " +
  "font-src 'self' data:; connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'self'";

let bundle: { raw: Buffer; gzip: Buffer } | undefined;
/** The renderer's bundle (3.6 MB, 1 MB gzipped), read and compressed once, on the first request for it. */
function loadBundle() {
  if (!bundle) {
    const raw = readFileSync(createRequire(import.meta.url).resolve('@scalar/api-reference/browser/standalone.js'));
    bundle = { raw, gzip: gzipSync(raw, { level: 9 }) };
  }
  return bundle;
}

/** /docs and its bundle (auth none; every role that serves /openapi.json). */
export function docsRoutes(): RouteSpec[] {
  return [
    route({
      method: 'GET',
      url: DOCS_PATH,
      auth: 'none',
      summary: 'The API reference page',
      contentType: 'text/html',
      handler: async ({ reply }) => {
        reply
          .type('text/html; charset=utf-8')
          .header('content-security-policy', DOCS_CSP)
          .header('cache-control', 'no-cache');
        return PAGE;
      },
    }),
    route({
      method: 'GET',
      url: DOCS_BUNDLE_PATH,
      auth: 'none',
      summary: "The API reference page's renderer",
      contentType: 'text/javascript',
      handler: async ({ req, reply }) => {
        const b = loadBundle();
        const gzip = /\bgzip\b/.test(String(req.headers['accept-encoding'] ?? ''));
        reply.type('text/javascript; charset=utf-8').header('cache-control', 'public, max-age=3600');
        addVary(reply, 'Accept-Encoding');
        if (gzip) reply.header('content-encoding', 'gzip');
        return gzip ? b.gzip : b.raw;
      },
    }),
  ];
}
