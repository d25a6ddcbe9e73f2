import { z } from 'zod';
import { IDENTIFIER_RE } from '../common';
import { documentResponse } from './documents';
import { folderResponse } from './folders';
import { recordResponse } from './records';

/**
 * The entity kinds of the change stream (GET /v1/changes), each with the read permission that lets its events through.
 */
export const CHANGE_ENTITY_KINDS = ['records', 'documents', 'folders'] as const;
export type ChangeEntityKind = (typeof CHANGE_ENTITY_KINDS)[number];
export const CHANGE_KIND_PERMISSION: Record<ChangeEntityKind, string> = {
  records: 'records:r',
  documents: 'documents:r',
  folders: 'folders:r',
};

/** Most type names one `types` filter may list (docs/limits.md). */
export const CHANGE_TYPES_MAX = 100;

/** The event names of the change stream, by entity kind (docs/api.md "Change stream"). */
export const CHANGE_EVENT_NAMES = {
  records: ['record.created', 'record.updated', 'record.deleted', 'record.indexed'],
  documents: [
    'document.created',
    'document.updated',
    'document.uploaded',
    'document.indexed',
    'document.stored',
    'document.skipped',
    'document.failed',
    'document.deleted',
  ],
  folders: ['folder.created', 'folder.updated', 'folder.deleted'],
} as const satisfies Record<ChangeEntityKind, readonly string[]>;
export type ChangeEventName = (typeof CHANGE_EVENT_NAMES)[ChangeEntityKind][number];

/** A log position as the query and Last-Event-ID carry it: a whole number, 0 = the start of the log. */
export const LOG_POSITION_RE = /^(0|[1-9][0-9]{0,15})$/;

const commaList = (what: string, ok: (item: string) => boolean, max: number) =>
  z
    .string()
    .max(max * 70)
    .refine((s) => {
      const items = s.split(',');
      return items.length <= max && items.every((i) => ok(i));
    }, `must be a comma-separated list of at most ${max} ${what}`);

export const changesQuery = z
  .object({
    /** Only these type names (records and documents of those schemas; folders have none and are left out). */
    types: commaList('type names', (t) => IDENTIFIER_RE.test(t), CHANGE_TYPES_MAX).optional(),
    /** Only these entity kinds; a kind named here without its read permission is a 403. */
    entities: commaList(
      'of records, documents, folders',
      (k) => (CHANGE_ENTITY_KINDS as readonly string[]).includes(k),
      CHANGE_ENTITY_KINDS.length,
    ).optional(),
    /**
     * Events after this log position (the `position` of the last event seen; 0: the whole log). Last-Event-ID wins over
     * it.
     */
    startFrom: z.string().regex(LOG_POSITION_RE, 'must be a log position (a whole number)').optional(),
  })
  .strict();

/** The `data` of one change event. `entity`: what GET returns to the caller for that version; null after a delete. */
const changeData = <E extends z.ZodTypeAny>(entity: E) =>
  z.object({
    position: z.number().int(),
    type: z.string(),
    entityId: z.string(),
    typeName: z.string().nullable(),
    version: z.number().int().nullable(),
    at: z.string(),
    entity: entity.nullable(),
  });
export const recordChange = changeData(recordResponse);
export const documentChange = changeData(documentResponse);
export const folderChange = changeData(folderResponse);
export type ChangeData = z.infer<typeof recordChange> | z.infer<typeof documentChange> | z.infer<typeof folderChange>;

const DATA_OF: Record<ChangeEntityKind, z.ZodTypeAny> = {
  records: recordChange,
  documents: documentChange,
  folders: folderChange,
};
/** The events of GET /v1/changes (RouteSpec `stream`; /openapi.json). */
export const changeStreamEvents: Record<string, z.ZodTypeAny> = Object.fromEntries(
  CHANGE_ENTITY_KINDS.flatMap((k) => CHANGE_EVENT_NAMES[k].map((name) => [name, DATA_OF[k]])),
);
