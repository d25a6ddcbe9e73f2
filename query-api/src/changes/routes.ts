import { Readable } from 'node:stream';
import { CHANGE_ENTITY_KINDS, CHANGE_KIND_PERMISSION, type ChangeEntityKind, changesQuery, changeStreamEvents, forbidden, invalid, LOG_POSITION_RE, type Principal, route, type RouteSpec, ServiceError } from '@svc/contracts';
import { canReach, canSeeFolder, grants, type UsageCharges } from '@svc/domain';
import type { ChangeFeed } from './feed';
import type { Change } from './resolve';

/** A comment line while nothing else is sent, so that proxies and clients see the stream alive. */
export const CHANGE_PING_MS = 15_000;
/** How long a client at the per-context limit is told to wait before opening again. */
const RETRY_AFTER_SECONDS = 5;
/** How often an open stream checks its credential again: a revoked token (or one of a deleted context) stops receiving within this. */
const RECHECK_MS = 5_000;

const bearerOf = (h: string | undefined) => /^bearer +(.*)$/is.exec(h ?? '')?.[1].trim() || null;

/** The `id:`, `event:` and `data:` lines of one change (JSON has no raw newlines), encoded once for every stream. */
export const changeFrame = (c: Change): Buffer =>
  (c.frame ??= Buffer.from(`id: ${c.position}\nevent: ${c.type}\ndata: ${JSON.stringify({ position: c.position, type: c.type, entityId: c.entityId, typeName: c.typeName, version: c.version, at: c.at, entity: c.entity })}\n\n`));

/** The kinds a caller's stream carries: those asked for (all by default) that its permissions read. An explicit kind it may not read is a 403. */
function kindsOf(p: Principal, asked: string | undefined): Set<ChangeEntityKind> {
  const may = (k: ChangeEntityKind) => grants(p.allowedActions, CHANGE_KIND_PERMISSION[k]);
  if (asked !== undefined) {
    const kinds = [...new Set(asked.split(','))] as ChangeEntityKind[];
    if (!kinds.every(may)) throw forbidden();
    return new Set(kinds);
  }
  const kinds = CHANGE_ENTITY_KINDS.filter(may);
  if (!kinds.length) throw forbidden();
  return new Set(kinds);
}

/** The caller sees a change exactly when a GET of that entity would answer it: tenant, context and data scope (the context root to all). */
const visibleTo = (p: Principal, c: Change) => (c.kind === 'folders' ? canSeeFolder(p, { ...c.owner, isProtected: c.owner.isProtected === true }) : canReach(p, c.owner));

/**
 * GET /v1/changes (docs/api.md "Change stream"): the caller's visible record, document and folder changes as
 * Server-Sent Events, from the read models' position (or after Last-Event-ID / startFrom), each `id:` the log
 * position. Opening counts as one request toward the burst limit; each event sent is metered as one read.
 */
export function changeRoutes(o: { feed: ChangeFeed; meter?: UsageCharges }): RouteSpec[] {
  const { feed } = o;
  return [
    route({
      method: 'GET',
      url: '/v1/changes',
      operationId: 'streamChanges',
      auth: 'data',
      rateLimited: true,
      stream: changeStreamEvents,
      streamDescription:
        'A Server-Sent Events stream that stays open: one frame per change, in log order, each with `id: <log position>`, `event: <name>` and one `data: <JSON>` line; a `: ping` comment after 15 s without a change. Send the last `id` back as the Last-Event-ID header to resume after it. The schema is that of one frame.',
      errors: [429],
      summary:
        'Stream the record, document and folder changes the caller can read (Server-Sent Events, `id:` the log position; resume with Last-Event-ID); records:r, documents:r, folders:r per kind',
      query: changesQuery,
      handler: async ({ query, principal: p, req, reply }) => {
        const header = req.headers['last-event-id'];
        const lastEventId = Array.isArray(header) ? header[0] : header;
        if (lastEventId !== undefined && !LOG_POSITION_RE.test(lastEventId.trim())) throw invalid('Last-Event-ID must be a log position (the id of an event of this stream)');
        const kinds = kindsOf(p, query.entities);
        const types = query.types ? new Set(query.types.split(',')) : undefined;
        const context = `${p.tenantId}\u0000${p.contextId}`;
        const token = bearerOf(req.headers.authorization);
        if (!feed.admit(context))
          throw new ServiceError('RATE_LIMITED', `At most ${feed.perContext} change streams may be open in a context: close one, or try again later`, {
            headers: { 'retry-after': String(RETRY_AFTER_SECONDS), 'x-ratelimit-limit': String(feed.perContext) },
          });

        let stopped = false;
        let pending = false;
        let notify: (() => void) | undefined;
        const wake = () => {
          pending = true;
          notify?.();
        };
        const release = () => {
          if (stopped) return;
          stopped = true;
          feed.leave(wake);
          feed.release(context);
        };
        reply.raw.on('close', () => {
          release();
          wake();
        });
        let cursor: number;
        try {
          const head = await feed.join(wake);
          const from = lastEventId !== undefined ? lastEventId.trim() : query.startFrom;
          cursor = from !== undefined ? Number(from) : head;
        } catch (e) {
          release();
          throw e;
        }
        const wanted = (c: Change) => kinds.has(c.kind) && (!types || (c.typeName !== null && types.has(c.typeName))) && visibleTo(p, c);

        async function* frames(): AsyncGenerator<string | Buffer> {
          try {
            // Something at once: the response's head leaves now, not with the first change.
            yield ': stream open\n\n';
            let quietSince = Date.now();
            let checkedAt = Date.now();
            while (!stopped && !feed.closing) {
              // A change is sent only to a credential that still works: expired, revoked or of a deleted context, the stream ends.
              if (p.expiresAt !== undefined && Date.now() >= p.expiresAt) break;
              if (Date.now() - checkedAt >= RECHECK_MS) {
                checkedAt = Date.now();
                if (!(await feed.stillValid(token))) break;
              }
              pending = false;
              const { changes, next } = await feed.after(cursor);
              cursor = next;
              const out: Buffer[] = [];
              let bytes = 0;
              for (const c of changes) {
                if (!wanted(c)) continue;
                const f = changeFrame(c);
                out.push(f);
                bytes += f.length;
              }
              if (out.length) {
                quietSince = Date.now();
                // Each event is one read of its bytes, counted together.
                o.meter?.countRead(p, bytes, undefined, out.length);
                yield out.length === 1 ? out[0] : Buffer.concat(out, bytes);
              }
              if (changes.length || cursor < feed.position || pending) continue;
              const wait = Math.min(quietSince + CHANGE_PING_MS, checkedAt + RECHECK_MS) - Date.now();
              if (wait > 0) {
                let timer: NodeJS.Timeout | undefined;
                await new Promise<void>((resolve) => {
                  notify = resolve;
                  timer = setTimeout(resolve, wait);
                  if (pending || stopped) resolve();
                });
                clearTimeout(timer);
                notify = undefined;
              }
              if (!pending && !stopped && Date.now() - quietSince >= CHANGE_PING_MS) {
                quietSince = Date.now();
                yield ': ping\n\n';
              }
            }
          } finally {
            release();
          }
        }
        reply
          .type('text/event-stream; charset=utf-8')
          .header('cache-control', 'no-cache, no-transform')
          .header('x-accel-buffering', 'no');
        return reply.send(Readable.from(frames(), { objectMode: false, highWaterMark: 1024 }));
      },
    }),
  ];
}
