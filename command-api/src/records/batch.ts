import { z } from 'zod';
import {
  batchWriteResponse,
  createRecordBody,
  ERROR_CATALOGUE,
  forbidden,
  isServiceError,
  type RequestMeta,
  route,
  type RouteSpec,
  ServiceError,
  zodMessage,
} from '@svc/contracts';
import { type CommandDeps, grants, recordView } from '@svc/domain';
import { secondsToWindowEnd, type WindowCounter } from '../limits/window-counter';
import { changeRecord, createRecord, ValueHeldError } from './commands';

export const BATCH_WRITE_MAX = 50;
/** Items per account per minute that may collide with values held outside the caller's reach. */
export const COLLISION_BUDGET_PER_MINUTE = 20;

/**
 * Each item is any object here and is validated on its own in the handler: an invalid item is that item's `error`
 * result, never a 400 for the batch (spec: "HTTP 200 with a per-item results array even when items fail"). The
 * union keeps the item's shape in /openapi.json.
 */
export const batchWriteBody = z
  .object({
    records: z
      .array(z.union([createRecordBody, z.object({}).passthrough()]))
      .min(1)
      .max(BATCH_WRITE_MAX),
  })
  .strict();

type ItemResult =
  | { index: number; status: 'created' | 'updated'; id: string; record: ReturnType<typeof recordView> }
  | {
      index: number;
      status: 'conflict';
      errorCode: 'already_exists';
      error: { code: 'already_exists'; message: string };
    }
  | { index: number; status: 'error'; errorCode: string; error: { code: string; message: string } };

type BatchItem = z.infer<typeof createRecordBody>;

/** A failed item: `errorCode` repeats `error.code`, as the error body names its code (spec "Errors"). */
const failed = <S extends 'conflict' | 'error', C extends string>(index: number, status: S, code: C, message: string) =>
  ({ index, status, errorCode: code, error: { code, message } }) as const;

/** One item's write: a create, or (an externalId the caller owns) the update of that record by full save. */
async function writeItem(deps: CommandDeps, item: BatchItem, meta: RequestMeta, dryRun = false) {
  const out = await createRecord(deps, item, meta, { dryRun });
  if (out.status === 'created') return { status: 'created' as const, out };
  // The update is a PUT: it needs what PUT /v1/records/{id} needs, beyond the batch's records:c.
  if (!grants(meta.principal.allowedActions, 'records:u')) throw forbidden();
  const record = await changeRecord(
    deps,
    out.record.id,
    'put',
    { ...item, externalId: undefined, indexMode: undefined },
    meta,
    { dryRun },
  );
  return { status: 'updated' as const, record };
}

/**
 * Whether writing these items would spend the collision budget: some item collides with a value (externalId or
 * unique field) held by a record outside the caller's read reach. Every item is checked as it would be written,
 * nothing is written; items that would fail otherwise spend nothing. (Items of the batch that would collide with
 * each other collide with the caller's own new records: reachable, so they spend nothing either.)
 */
async function wouldSpend(deps: CommandDeps, items: BatchItem[], meta: RequestMeta): Promise<boolean> {
  for (const item of items) {
    try {
      await writeItem(deps, item, meta, true);
    } catch (e) {
      if (e instanceof ValueHeldError && !e.reachable) return true;
    }
  }
  return false;
}

/**
 * POST /v1/records/batch: up to 50 creates, each with its own outcome (HTTP 200
 * even when items fail). Re-sending an externalId the caller owns updates that
 * record (`updated`). A value held by a record the caller cannot read, or a
 * violated unique field, is `conflict` / `already_exists`; the former spends the
 * account's collision budget. Once it is spent, a batch that would spend more
 * (an item colliding outside the caller's reach) is a 429 and writes nothing;
 * a batch without such items (the conflicting ones removed, clean imports,
 * re-sent own externalIds) still goes through: waiting does not clear the
 * budget, removing the colliding items does.
 */
export function batchWriteRoute(deps: CommandDeps, collisions: WindowCounter): RouteSpec {
  return route({
    method: 'POST',
    url: '/v1/records/batch',
    operationId: 'batchWriteRecords',
    auth: 'data',
    permission: 'records:c',
    summary: 'Create (or update by owned externalId) up to 50 records; per-item results',
    body: batchWriteBody,
    response: batchWriteResponse,
    write: true,
    handler: async ({ body, meta }) => {
      const key = `collisions:${meta.principal.accountId}`;
      const parsed = body.records.map((r) => createRecordBody.safeParse(r));
      const valid = parsed.flatMap((p) => (p.success ? [p.data] : []));
      if ((await collisions.get(key, meta.now)) >= COLLISION_BUDGET_PER_MINUTE && (await wouldSpend(deps, valid, meta)))
        throw new ServiceError(
          'RATE_LIMITED',
          'Batch-write collision budget exhausted: remove the items whose result was conflict ' +
            '(already_exists) and resubmit; waiting alone does not help',
          { headers: { 'retry-after': String(secondsToWindowEnd(meta.now)) } },
        );
      const results: ItemResult[] = [];
      for (const [index, p] of parsed.entries()) {
        if (!p.success) {
          results.push(failed(index, 'error', 'VALIDATION_ERROR', `Invalid item: ${zodMessage(p.error)}`));
          continue;
        }
        try {
          const w = await writeItem(deps, p.data, meta);
          if (w.status === 'created')
            results.push({
              index,
              status: 'created',
              id: w.out.record.id,
              record: recordView(w.out.record, w.out.schema.definition, { full: true }),
            });
          else results.push({ index, status: 'updated', id: w.record.id, record: w.record });
        } catch (e) {
          if (e instanceof ValueHeldError) {
            if (!e.reachable) await collisions.add(key, 1, meta.now);
            results.push(failed(index, 'conflict', 'already_exists', e.message));
          } else if (isServiceError(e)) {
            results.push(failed(index, 'error', e.code, e.message));
          } else {
            // Items before this one are committed: the batch answers item by item, never 500 as a whole.
            deps.log?.(
              `batch write: item ${index} failed (request ${meta.requestId}): ` +
                `${e instanceof Error ? e.message : String(e)}`,
            );
            results.push(failed(index, 'error', 'INTERNAL', ERROR_CATALOGUE.INTERNAL.message));
          }
        }
      }
      return { results };
    },
  });
}
