import type { ChangeEntityKind, ChangeEventName } from '@svc/contracts';
import {
  DOCUMENT_TABLES,
  documentAggregate,
  documentView,
  type EventStore,
  folderView,
  HISTORY_TABLES,
  loadAggregate,
  recordView,
  type Sql,
  type StoredEvent,
  streams,
} from '@svc/domain';
import { DocumentReads, type DocumentRow } from '../documents/reads';
import { FolderReads, type FolderRow } from '../folders/reads';
import { RecordReads, type RecordRow } from '../records/reads';
import type { SchemaReads } from '../schemas/reads';

/**
 * Who may see a change: the entity's tenant, context and ownership at that version (what canReach / canSeeFolder read).
 */
export interface ChangeOwner {
  tenantId: string | null;
  contextId: string | null;
  userId: string | null;
  scopes: string[];
  /** A context's root folder: visible to every credential of its context. */
  isProtected?: boolean;
}

/** One event of the change stream, before the caller's filters: the same for every caller, so built once. */
export interface Change {
  position: number;
  kind: ChangeEntityKind;
  type: ChangeEventName;
  entityId: string;
  typeName: string | null;
  version: number | null;
  at: string;
  entity: Record<string, unknown> | null;
  owner: ChangeOwner;
  /**
   * Its SSE frame, encoded for the first stream that sends it and reused by the others (the data is the same for all).
   */
  frame?: Buffer;
}

/** The change-stream name of a log event and the entity it is about; undefined for events the stream does not carry. */
function nameOf(
  e: StoredEvent,
): { kind: ChangeEntityKind; type: ChangeEventName; id: string; content?: boolean; deleted?: boolean } | undefined {
  switch (e.type) {
    case 'RecordCreated':
      return { kind: 'records', type: 'record.created', id: e.data.recordId, content: true };
    case 'RecordUpdated':
      return { kind: 'records', type: 'record.updated', id: e.data.recordId, content: true };
    case 'RecordDeleted':
      return { kind: 'records', type: 'record.deleted', id: e.data.recordId, deleted: true };
    case 'DocumentCreated':
      return { kind: 'documents', type: 'document.created', id: e.data.documentId, content: true };
    case 'DocumentUpdated':
      return { kind: 'documents', type: 'document.updated', id: e.data.documentId, content: true };
    case 'DocumentFileUploaded':
      return { kind: 'documents', type: 'document.uploaded', id: e.data.documentId };
    case 'DocumentIndexed':
      return { kind: 'documents', type: 'document.indexed', id: e.data.documentId };
    case 'DocumentIndexSkipped':
      return {
        kind: 'documents',
        type: e.data.status === 'STORED' ? 'document.stored' : 'document.skipped',
        id: e.data.documentId,
      };
    case 'DocumentFailed':
      return { kind: 'documents', type: 'document.failed', id: e.data.documentId };
    case 'DocumentDeleted':
      return { kind: 'documents', type: 'document.deleted', id: e.data.documentId, deleted: true };
    case 'FolderCreated':
      return { kind: 'folders', type: 'folder.created', id: e.data.folderId, content: true };
    case 'FolderUpdated':
      return { kind: 'folders', type: 'folder.updated', id: e.data.folderId, content: true };
    case 'FolderDeleted':
      return { kind: 'folders', type: 'folder.deleted', id: e.data.folderId, deleted: true };
  }
  return undefined;
}

/** The successful index outcomes a log event carries (record.indexed), each for the record revision it indexed. */
function indexedOutcomes(e: StoredEvent): Array<{ recordId: string; forRevision: number }> {
  if (e.type === 'RecordsIndexed')
    return e.data.outcomes
      .filter((o) => o.status === 'INDEXED')
      .map((o) => ({ recordId: o.recordId, forRevision: o.forRevision }));
  if (e.type === 'RecordIndexed' && e.data.status === 'INDEXED')
    return [{ recordId: e.data.recordId, forRevision: e.data.forRevision }];
  return [];
}

/** Does the stream carry anything for this log event? (Most of the log, metering and reservations, it does not.) */
export const carriesChange = (e: StoredEvent) =>
  nameOf(e) !== undefined || e.type === 'RecordsIndexed' || e.type === 'RecordIndexed';

type Version = { version: number; state: Record<string, unknown> | null };
type Tombstone = {
  tenantId: string;
  contextId: string;
  typeName: string | null;
  lastVersion: number;
  owner: { userId: string | null; scopes: string[] };
};

/**
 * Turns pages of the log into changes, reading each entity from the read models as a GET does (the same reads and
 * views), one batch of statements a page. An entity that changed again since the event (a stream resumed from an
 * older position) is shown as its history kept that version; when its schema keeps no history, a record's `entity`
 * and `version` are null and a document is shown as it is. A record's index outcome for a revision replaced since, and
 * an event of an entity whose context is gone, are left out: there is nothing a GET would show for them.
 */
export class ChangeResolver {
  private readonly records: RecordReads;
  private readonly documents: DocumentReads;
  private readonly folders: FolderReads;

  constructor(
    private readonly sql: Sql,
    private readonly schemas: SchemaReads,
    /** Records created lately (beside the projector): their rows need no query. */
    recent?: { row(id: string): RecordRow | undefined },
    /** Where a document's stream is read when a replayed processing step is older than its read model row. */
    private readonly store?: EventStore,
  ) {
    this.records = new RecordReads(sql, undefined, recent);
    this.documents = new DocumentReads(sql);
    this.folders = new FolderReads(sql);
  }

  async resolve(events: StoredEvent[]): Promise<Change[]> {
    const named = events
      .map((e) => ({ e, n: nameOf(e), outcomes: indexedOutcomes(e) }))
      .filter((x) => x.n || x.outcomes.length);
    if (!named.length) return [];
    const ids = { records: new Set<string>(), documents: new Set<string>(), folders: new Set<string>() };
    const deletedIds: string[] = [];
    for (const { e, n, outcomes } of named) {
      if (n) ids[n.kind].add(n.id);
      if (n?.deleted) deletedIds.push(n.id);
      for (const o of outcomes) ids.records.add(o.recordId);
    }
    const [records, documents, folders, tombstones] = await Promise.all([
      ids.records.size ? this.records.rows([...ids.records]) : [],
      ids.documents.size ? this.documents.byIds([...ids.documents]) : [],
      ids.folders.size ? this.folders.byIds([...ids.folders]) : [],
      deletedIds.length ? this.tombstonesOf(deletedIds) : new Map<string, Tombstone>(),
    ]);
    const rows = { records: byId(records), documents: byId(documents), folders: byId(folders) };
    // A record's revision tells whether the read model still holds the event's version; other kinds ask history.
    const current = (e: StoredEvent, n: { kind: ChangeEntityKind; id: string }) =>
      n.kind === 'records' && rows.records.get(n.id)?.revision === e.revision;
    const needed = named.filter(({ e, n }) => n?.content && !current(e, n)).map(({ e }) => e.id);
    // Documents with a processing step in the page: where their read model stands (the stream revision it applied).
    const stepped = [
      ...new Set(
        named.filter(({ n }) => n && !n.content && !n.deleted && rows.documents.has(n.id)).map((x) => x.n!.id),
      ),
    ];
    // A record changed and then deleted has no row: its type name is its tombstone's.
    const gone = [...ids.records].filter((id) => !rows.records.has(id) && !tombstones.has(id));
    const [versions, revisions] = await Promise.all([
      needed.length ? this.versionsOf(needed) : new Map<string, Version>(),
      stepped.length ? this.documentRevisions(stepped) : new Map<string, number>(),
      gone.length ? this.tombstonesOf(gone).then((t) => t.forEach((v, k) => tombstones.set(k, v))) : undefined,
    ]);
    const out: Change[] = [];
    for (const { e, n, outcomes } of named) {
      const at = e.metadata.occurredAt;
      for (const o of outcomes) {
        const row = rows.records.get(o.recordId);
        // Only the outcome of the record's current content: an older revision's was replaced (a later outcome follows).
        if (!row || row.revision !== o.forRevision || row.indexStatus !== 'INDEXED') continue;
        out.push({
          position: e.position,
          kind: 'records',
          type: 'record.indexed',
          entityId: row.id,
          typeName: row.typeName,
          version: row.version,
          at,
          entity: await this.view('records', row),
          owner: row,
        });
      }
      if (!n) continue;
      const base = { position: e.position, kind: n.kind, type: n.type, entityId: n.id, at };
      if (n.deleted) {
        const t = tombstones.get(n.id);
        if (!t) continue;
        out.push({
          ...base,
          typeName: t.typeName,
          version: t.lastVersion + 1,
          entity: null,
          owner: { tenantId: t.tenantId, contextId: t.contextId, ...t.owner },
        });
        continue;
      }
      const row = rows[n.kind].get(n.id) as (RecordRow | DocumentRow | FolderRow) | undefined;
      const typeName = typeNameOf(e, row) ?? (n.kind === 'records' ? (tombstones.get(n.id)?.typeName ?? null) : null);
      if (!n.content) {
        if (!row) continue;
        // A document's processing step: the version stays; the document as a GET showed it right after the step.
        // When anything happened to it since (later steps, edits), its stream is read up to the step.
        if (revisions.get(n.id) === e.revision || !this.store) {
          out.push({ ...base, typeName, version: row.version, entity: await this.view(n.kind, row), owner: row });
          continue;
        }
        const then = await this.documentAt(n.id, e.revision);
        if (!then) continue;
        out.push({ ...base, typeName, version: then.version, entity: await this.view(n.kind, then), owner: then });
        continue;
      }
      const h = versions.get(e.id);
      // Documents and folders: the history row's version, or, where a schema keeps no history, the document as it is.
      if (row && (current(e, n) || (n.kind !== 'records' && (!h || row.version === h.version)))) {
        out.push({ ...base, typeName, version: row.version, entity: await this.view(n.kind, row), owner: row });
        continue;
      }
      // Changed again since: that version as history kept it, owned as the event says.
      const owner = ownerOf(e, row as { isProtected?: boolean } | undefined, h?.state);
      if (!owner) continue;
      out.push({ ...base, typeName, version: h?.version ?? null, entity: h?.state ?? null, owner });
    }
    return out;
  }

  private async view(
    kind: ChangeEntityKind,
    row: RecordRow | DocumentRow | FolderRow,
  ): Promise<Record<string, unknown>> {
    if (kind === 'records') {
      const r = row as RecordRow;
      return recordView(r, await this.schemas.definition(r.schemaId), {
        full: true,
        indexStatus: r.indexStatus,
        indexFailure: r.indexFailure,
        bytes: r.payloadBytes,
      }) as unknown as Record<string, unknown>;
    }
    if (kind === 'documents') {
      const d = row as DocumentRow;
      return documentView(d, d.schemaId ? await this.schemas.definition(d.schemaId) : undefined, {
        full: true,
      }) as unknown as Record<string, unknown>;
    }
    return folderView(row as FolderRow) as unknown as Record<string, unknown>;
  }

  /** History rows of content events (row id = the event's id): the version each made and the entity as it was then. */
  private async versionsOf(eventIds: string[]): Promise<Map<string, Version>> {
    const { rows } = await this.sql.query<{ row_id: string; version: number; state: Record<string, unknown> | null }>(
      `SELECT row_id, version, state FROM ${HISTORY_TABLES.versions} WHERE row_id = ANY($1::text[])`,
      [eventIds],
    );
    return new Map(rows.map((r) => [r.row_id, { version: Number(r.version), state: r.state }]));
  }

  /** The stream revision each document's read model row has applied. */
  private async documentRevisions(ids: string[]): Promise<Map<string, number>> {
    const { rows } = await this.sql.query<{ document_id: string; revision: string | number }>(
      `SELECT document_id, revision FROM ${DOCUMENT_TABLES.documents} WHERE document_id = ANY($1::text[])`,
      [ids],
    );
    return new Map(rows.map((r) => [r.document_id, Number(r.revision)]));
  }

  /** A document as its stream stood at `revision` (the state a GET answered from right after that event). */
  private async documentAt(id: string, revision: number): Promise<DocumentRow | undefined> {
    const { state } = await loadAggregate(this.store!, streams.document(id), documentAggregate, {
      maxCount: revision + 1,
    });
    if (!state.exists) return undefined;
    const { exists: _exists, ...doc } = state;
    return doc;
  }

  private async tombstonesOf(entityIds: string[]): Promise<Map<string, Tombstone>> {
    const { rows } = await this.sql.query<{
      entity_id: string;
      tenant_id: string;
      context_id: string;
      type_name: string | null;
      last_version: number;
      owner: Tombstone['owner'];
    }>(
      `SELECT entity_id, tenant_id, context_id, type_name, last_version, owner FROM ${HISTORY_TABLES.tombstones} ` +
        `WHERE ` +
        'entity_id = ANY($1::text[])',
      [entityIds],
    );
    return new Map(
      rows.map((r) => [
        r.entity_id,
        {
          tenantId: r.tenant_id,
          contextId: r.context_id,
          typeName: r.type_name,
          lastVersion: Number(r.last_version),
          owner: r.owner,
        },
      ]),
    );
  }
}

const byId = <T extends { id: string }>(rows: T[]) => new Map(rows.map((r) => [r.id, r]));

function typeNameOf(e: StoredEvent, row: RecordRow | DocumentRow | FolderRow | undefined): string | null {
  if (row && 'typeName' in row) return row.typeName ?? null;
  if (e.type === 'RecordCreated' || e.type === 'RecordDeleted') return e.data.typeName;
  if (e.type === 'DocumentCreated' || e.type === 'DocumentUpdated') return e.data.typeName;
  return null;
}

/**
 * The ownership of an older version: from its content event (which carries it in full), the tenant and context of the
 * log.
 */
function ownerOf(
  e: StoredEvent,
  row: { isProtected?: boolean } | undefined,
  state: Record<string, unknown> | null | undefined,
): ChangeOwner | undefined {
  const where = { tenantId: e.metadata.tenantId, contextId: e.metadata.contextId };
  if (
    e.type === 'RecordCreated' ||
    e.type === 'RecordUpdated' ||
    e.type === 'DocumentCreated' ||
    e.type === 'DocumentUpdated' ||
    e.type === 'FolderUpdated'
  )
    return {
      ...where,
      userId: e.data.userId,
      scopes: e.data.scopes,
      isProtected: row?.isProtected ?? (state?.isProtected as boolean | undefined),
    };
  if (e.type === 'FolderCreated')
    return { ...where, userId: e.data.userId ?? null, scopes: e.data.scopes ?? [], isProtected: e.data.isProtected };
  return undefined;
}
