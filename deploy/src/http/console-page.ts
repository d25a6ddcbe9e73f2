import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { extname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import type { FastifyReply } from 'fastify';
import { z } from 'zod';
import { notFound, route, type RouteSpec } from '@svc/contracts';
import { parseObjectStoreUrl } from '../engines/s3-blobs';
import { addVary } from './cors';

/**
 * GET /console: the web console (console/ in the repository), a single-page app built ahead of time by
 * `npm run build` into console/dist/ and served from there as static files: the page at /console, its scripts,
 * stylesheet and icon at /console/<file>. It calls the public API only, from the page, with the credential the
 * person signs in with; the service gives the page nothing else.
 */
export const CONSOLE_PATH = '/console';
export const CONSOLE_ASSET_PATH = '/console/:file';

/** console/dist, found from this module in the sources (deploy/src/http) and in the build (deploy/dist/http) alike. */
export const CONSOLE_DIST = fileURLToPath(new URL('../../../console/dist/', import.meta.url));

/**
 * Nothing but the service itself: no inline script or style, no font, no frame. `connect-src` also names where the
 * presigned uploads go when an object store takes them (its endpoint, and its virtual-hosted bucket host).
 */
export function consoleCsp(uploadOrigins: string[] = []): string {
  return [
    "default-src 'self'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self' data:",
    "font-src 'self'",
    `connect-src ${["'self'", ...uploadOrigins].join(' ')}`,
    "object-src 'none'",
    "base-uri 'none'",
    "form-action 'self'",
    "frame-ancestors 'none'",
  ].join('; ');
}

/**
 * Where the browser PUTs a presigned upload when OBJECT_STORE_URL is set: the store's endpoint, or its bucket's own
 * host.
 */
export function consoleUploadOrigins(objectStoreUrl: string | undefined): string[] {
  if (!objectStoreUrl) return [];
  const s3 = parseObjectStoreUrl(objectStoreUrl);
  const endpoint = new URL(s3.endpoint);
  return s3.forcePathStyle
    ? [endpoint.origin]
    : [endpoint.origin, `${endpoint.protocol}//${s3.bucket}.${endpoint.host}`];
}

const TYPES: Record<string, string> = {
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.json': 'application/json; charset=utf-8',
  '.png': 'image/png',
};

interface Asset {
  raw: Buffer;
  gzip: Buffer;
  type: string;
}

/** Every file of dist/, read and compressed once (about 60 KB in all); undefined when the console was not built. */
let assets: Map<string, Asset> | undefined;
function loadAssets(dir: string): Map<string, Asset> | undefined {
  if (assets) return assets;
  if (!existsSync(join(dir, 'index.html'))) return undefined;
  const files = new Map<string, Asset>();
  for (const name of readdirSync(dir)) {
    const type = name === 'index.html' ? 'text/html; charset=utf-8' : TYPES[extname(name)];
    if (!type) continue;
    const raw = readFileSync(join(dir, name));
    files.set(name, { raw, gzip: gzipSync(raw, { level: 9 }), type });
  }
  assets = files;
  return files;
}

/** Drops the files read so far (tests rebuild the console under a running service). */
export function forgetConsoleAssets(): void {
  assets = undefined;
}

const NOT_BUILT = 'The console is not built: run `npm run build` (it writes console/dist/).';

/** /console and its files (auth none; every role that serves /openapi.json). */
export function consoleRoutes(opts: { uploadOrigins?: string[]; dir?: string } = {}): RouteSpec[] {
  const dir = opts.dir ?? CONSOLE_DIST;
  const csp = consoleCsp(opts.uploadOrigins);
  const send = (name: string, req: { headers: Record<string, unknown> }, reply: FastifyReply, cache: string) => {
    const files = loadAssets(dir);
    if (!files)
      return reply.status(503).type('text/plain; charset=utf-8').header('cache-control', 'no-store').send(NOT_BUILT);
    const a = files.get(name);
    if (!a) throw notFound();
    const gzip = /\bgzip\b/.test(String(req.headers['accept-encoding'] ?? ''));
    reply.type(a.type).header('cache-control', cache).header('x-content-type-options', 'nosniff');
    addVary(reply, 'Accept-Encoding');
    if (gzip) reply.header('content-encoding', 'gzip');
    return reply.send(gzip ? a.gzip : a.raw);
  };
  return [
    route({
      method: 'GET',
      url: CONSOLE_PATH,
      auth: 'none',
      summary: 'The web console',
      contentType: 'text/html',
      handler: async ({ req, reply }) => {
        reply.header('content-security-policy', csp).header('referrer-policy', 'no-referrer');
        return send('index.html', req, reply, 'no-cache');
      },
    }),
    route({
      method: 'GET',
      url: `${CONSOLE_PATH}/`,
      auth: 'none',
      summary: 'The web console (its address with a trailing slash)',
      contentType: 'text/html',
      // The page's links are relative to /console: from /console/ they would miss. Relative, for a path prefix.
      handler: async ({ reply }) => reply.status(308).header('location', '../console').send(),
    }),
    route({
      method: 'GET',
      url: CONSOLE_ASSET_PATH,
      auth: 'none',
      summary: "The web console's scripts, stylesheet and icon",
      params: z.object({ file: z.string() }),
      handler: async ({ req, params, reply }) => {
        // Scripts carry their content's hash in their name: cached for good. The rest is revalidated.
        const hashed = /-[A-Z0-9]{8}\.js$/.test(params.file);
        reply.header('content-security-policy', csp);
        return send(
          params.file === 'index.html' ? '' : params.file,
          req,
          reply,
          hashed ? 'public, max-age=31536000, immutable' : 'no-cache',
        );
      },
    }),
  ];
}
