import {
  CHANGE_ENTITY_KINDS,
  CHANGE_KIND_PERMISSION,
  type ChangeEntityKind,
  changesQuery,
  changeStreamEvents,
  forbidden,
  invalid,
  LOG_POSITION_RE,
  type Principal,
  route,
  type RouteSpec,
  ServiceError,
} from '@svc/contracts';
import { canReach, canSeeFolder, grants, type UsageCharges } from '@svc/domain';
import type { ChangeFeed } from './feed';
import type { Change } from './resolve';
import { ChangeStream } from './stream';

export { CHANGE_PING_MS } from './stream';

/** How long a client at the per-context limit is told to wait before opening again. */
const RETRY_AFTER_SECONDS = 5;

const bearerOf = (h: string | undefined) => /^bearer +(.*)$/is.exec(h ?? '')?.[1].trim() || null;

/**
 * The kinds a caller's stream carries: those asked for (all by default) that its permissions read. An explicit kind it
 * may not read is a 403.
 */
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

/**
 * The caller sees a change exactly when a GET of that entity would answer it: tenant, context and data scope (the
 * context root to all).
 */
const visibleTo = (p: Principal, c: Change) =>
  c.kind === 'folders'
    ? canSeeFolder(p, { ...c.owner, isProtected: c.owner.isProtected === true })
    : canReach(p, c.owner);

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
      anyPermission: Object.values(CHANGE_KIND_PERMISSION),
      rateLimited: true,
      stream: changeStreamEvents,
      streamDescription:
        'A Server-Sent Events stream that stays open: one frame per change, in log order, each with `id: ' +
        '<log position>`, `event: <name>` and one `data: <JSON>` line; a `: ping` comment after 15 s ' +
        'without a change. Send the last `id` back as the Last-Event-ID header to resume after it. The ' +
        'schema is that of one frame.',
      errors: [429],
      summary:
        'Stream the record, document and folder changes the caller can read (Server-Sent Events, `id:` ' +
        'the log position; resume with Last-Event-ID); records:r, documents:r, folders:r per kind',
      query: changesQuery,
      handler: async ({ query, principal: p, req, reply }) => {
        const header = req.headers['last-event-id'];
        // An empty header (a client that has seen no event yet) is no header: startFrom, else the head.
        const lastEventId = (Array.isArray(header) ? header[0] : header)?.trim() || undefined;
        if (lastEventId !== undefined && !LOG_POSITION_RE.test(lastEventId))
          throw invalid('Last-Event-ID must be a log position (the id of an event of this stream)');
        const kinds = kindsOf(p, query.entities);
        const types = query.types ? new Set(query.types.split(',')) : undefined;
        const context = `${p.tenantId}\u0000${p.contextId}`;
        const token = bearerOf(req.headers.authorization);
        if (!feed.admit(context))
          throw new ServiceError(
            'RATE_LIMITED',
            `At most ${feed.perContext} change streams may be open in a context: close one, or try again later`,
            // X-RateLimit-Limit stays the account's, set by the burst limit that counted this request.
            { headers: { 'retry-after': String(RETRY_AFTER_SECONDS) } },
          );

        let stream: ChangeStream | undefined;
        let released = false;
        const release = () => {
          if (released) return;
          released = true;
          feed.leave(wake);
          feed.release(context);
        };
        const wake = () => stream?.wake();
        reply.raw.on('close', () => (stream ? stream.stop() : release()));
        let cursor: number;
        try {
          const head = await feed.join(wake);
          const from = lastEventId ?? query.startFrom;
          cursor = from !== undefined ? Number(from) : head;
        } catch (e) {
          release();
          throw e;
        }
        const ds = p.dataScope;
        // Everything `wanted` depends on: streams with the same key share the feed's filtering and encoding.
        const filterKey = JSON.stringify([
          p.tenantId,
          p.contextId,
          ds?.userId ?? p.userId,
          ds?.scopes ?? [],
          [...kinds].sort(),
          types ? [...types].sort() : null,
        ]);
        const wanted = (c: Change) =>
          kinds.has(c.kind) && (!types || (c.typeName !== null && types.has(c.typeName))) && visibleTo(p, c);
        stream = new ChangeStream({
          feed,
          principal: p,
          token,
          cursor,
          filterKey,
          wanted,
          meter: o.meter,
          onStop: release,
        });
        // The client left while the stream was being set up.
        if (released) stream.stop();
        reply
          .type('text/event-stream; charset=utf-8')
          .header('cache-control', 'no-cache, no-transform')
          .header('x-accel-buffering', 'no');
        return reply.send(stream);
      },
    }),
  ];
}
