import {
  type DocumentStatus,
  type DomainEvent,
  type EventMetadata,
  IMMUTABLE_DOCUMENT_KEYS,
  InternalError,
  invalid,
  notFound,
  PATCHABLE_DOCUMENT_KEYS,
  type SchemaDefinition,
  ServiceError,
  versionConflict,
} from '@svc/contracts';
import { changedPayload, checkStoredPayload } from '../records/payload';
import { assertNever, type Decider, type EventsOf, nextVersion, unexpected } from '../shared/decider';
import { checkPatchBody, type PatchRules } from '../shared/patch-body';
import type { PayloadSealing } from '../shared/sealing';

/**
 * A document: a title, optional schema-bound payload, and a body of text that
 * arrives inline or is extracted from an uploaded file. Its `status` moves with
 * processing events (upload, extraction, indexing) that never change `version`;
 * only DocumentCreated / DocumentUpdated count as revisions of the entity.
 */
export interface LiveDocument {
  exists: true;
  id: string;
  tenantId: string | null;
  contextId: string | null;
  title: string;
  source: 'text' | 'file';
  status: DocumentStatus;
  indexFailure: { code: string; message: string } | null;
  indexMode: string;
  storeText: boolean;
  folderId: string;
  payload: Record<string, unknown>;
  schemaId: string | null;
  schemaVersion: number | null;
  typeName: string | null;
  userId: string | null;
  scopes: string[];
  externalId: string | null;
  fileName: string | null;
  fileType: string | null;
  fileSize: number | null;
  fileRef: string | null;
  uploadId: string | null;
  textRef: string | null;
  textBytes: number | null;
  textRevision: number;
  textRetained: boolean;
  createdAt: string;
  lastModified: string;
  version: number;
}
export type DocumentState = { exists: false; deleted?: boolean } | LiveDocument;

/** Largest inline text of one document, UTF-8 (docs/limits.md): larger is 413. Bigger texts go in as files. */
export const MAX_TEXT_BYTES = 5 * 1024 * 1024;

export function checkTextSize(text: string): number {
  const bytes = Buffer.byteLength(text, 'utf8');
  if (bytes > MAX_TEXT_BYTES)
    throw new ServiceError(
      'PAYLOAD_TOO_LARGE',
      `text: ${bytes} bytes, over the ${MAX_TEXT_BYTES / 1024 / 1024} MiB inline limit (upload it as a file)`,
      { details: { limitBytes: MAX_TEXT_BYTES } },
    );
  return bytes;
}

/** Statuses after which the text (if retained) can be read. */
export const TEXT_READY_STATUSES: readonly DocumentStatus[] = ['PENDING_INDEX', 'INDEXED', 'SKIPPED', 'STORED'];

/** Effective index mode: the request's, else the bound schema's default, else a 400. */
export function documentIndexMode(requested: string | undefined, def: SchemaDefinition | undefined): string {
  const mode = requested ?? def?.indexMode;
  if (!mode) throw invalid('indexMode is required (the document has no schema with a default indexMode)');
  return mode;
}

const NO_SCHEMA: SchemaDefinition = {
  typeName: 'document',
  allowedSurfaces: ['document'],
} as unknown as SchemaDefinition;

/**
 * Payload rules: validated against the bound schema (undeclared keys pass through; required fields on create
 * only); without one, only the generic rules.
 */
export function checkDocumentPayload(
  def: SchemaDefinition | undefined,
  payload: Record<string, unknown>,
  opts: { enforceRequired: boolean },
): void {
  checkStoredPayload(def ?? NO_SCHEMA, payload, opts);
}

export interface BoundSchema {
  schemaId: string;
  schemaVersion: number;
  definition: SchemaDefinition;
}

const DOCUMENT_PATCH: PatchRules = { immutable: IMMUTABLE_DOCUMENT_KEYS, patchable: PATCHABLE_DOCUMENT_KEYS };

/** Checks a PUT / PATCH body before anything (text blob, schema) is touched. Rejections change nothing. */
export function checkChangeBody(kind: 'put' | 'patch', body: Record<string, unknown>, state: LiveDocument): void {
  if (kind === 'patch') {
    checkPatchBody(body, DOCUMENT_PATCH);
    if (body.payload !== undefined && (typeof body.payload !== 'object' || Array.isArray(body.payload)))
      throw invalid('payload must be an object');
  } else {
    if (body.externalId !== undefined && body.externalId !== state.externalId) throw invalid('externalId is immutable');
    if (body.indexMode !== undefined && body.indexMode !== state.indexMode)
      throw invalid('indexMode is fixed at creation');
    if (body.storeText !== undefined && body.storeText !== state.storeText)
      throw invalid('storeText is fixed at ingest');
  }
  if ('folderId' in body && (body.folderId === null || body.folderId === ''))
    throw invalid('folderId cannot be cleared');
  if (body.expectedVersion !== undefined && body.expectedVersion !== state.version) throw versionConflict();
}

export type DocumentEvent = EventsOf<
  | 'DocumentCreated'
  | 'DocumentUpdated'
  | 'DocumentUploadRequested'
  | 'DocumentFileUploaded'
  | 'DocumentExtractionStarted'
  | 'DocumentTextReady'
  | 'DocumentIndexed'
  | 'DocumentIndexSkipped'
  | 'DocumentFailed'
  | 'DocumentTextDiscarded'
  | 'DocumentDeleted'
>;

export type DocumentCommand =
  | {
      type: 'CreateDocument';
      documentId: string;
      /** Where the document lives: scopes the blind index of its sensitive values. */
      tenantId: string;
      contextId: string;
      title: string;
      source: 'text' | 'file';
      indexMode?: string;
      storeText: boolean;
      folderId: string;
      payload: Record<string, unknown>;
      schema?: BoundSchema;
      userId: string | null;
      scopes: string[];
      externalId?: string;
      file?: { fileName: string; fileType: string; uploadId: string };
      /** Inline text, stored as a blob under `textRef` before the append. */
      text?: { textRef: string; textBytes: number };
    }
  /** A fresh upload grant for an existing file document (re-upload by externalId). */
  | { type: 'RequestUpload'; uploadId: string; fileName: string; fileType: string }
  | {
      /** PUT replaces the mutable fields (payload in full, title required); PATCH merges per RFC 7386. */
      type: 'ChangeDocument';
      kind: 'put' | 'patch';
      body: Record<string, unknown>;
      /** The schema bound after the change (undefined: none). */
      schema?: BoundSchema;
      /** Ownership after identity auto-assign (undefined: unchanged). */
      userId?: string | null;
      scopes?: string[];
      /** New text, stored as a blob under `textRef` before the append (re-ingest). */
      text?: { textRef: string; textBytes: number };
    }
  | { type: 'DeleteDocument'; expectedVersion?: number };

function evolve(state: DocumentState, e: DocumentEvent, m?: EventMetadata): DocumentState {
  const at = m?.occurredAt ?? '';
  if (e.type === 'DocumentCreated') {
    const { documentId, blindIndex: _, ...d } = e.data;
    return {
      exists: true,
      id: documentId,
      tenantId: m?.tenantId ?? null,
      contextId: m?.contextId ?? null,
      ...d,
      status: d.source === 'file' ? 'PENDING_UPLOAD' : 'PENDING_INDEX',
      indexFailure: null,
      fileSize: null,
      fileRef: null,
      textRef: null,
      textBytes: null,
      textRevision: 0,
      textRetained: false,
      createdAt: at,
      lastModified: at,
      version: 1,
    };
  }
  if (!state.exists) return state;
  switch (e.type) {
    case 'DocumentUpdated': {
      const { documentId: _, change: __, blindIndex: ___, ...d } = e.data;
      return nextVersion(state, { ...d, lastModified: at });
    }
    case 'DocumentUploadRequested':
      return {
        ...state,
        uploadId: e.data.uploadId,
        fileName: e.data.fileName,
        fileType: e.data.fileType,
        status: 'PENDING_UPLOAD',
        indexFailure: null,
      };
    case 'DocumentFileUploaded':
      if (e.data.uploadId !== state.uploadId) return state;
      return {
        ...state,
        status: 'UPLOADED',
        fileRef: e.data.fileRef,
        fileSize: e.data.fileSize,
        fileType: e.data.fileType,
        lastModified: at,
      };
    case 'DocumentExtractionStarted':
      return e.data.uploadId === state.uploadId ? { ...state, status: 'EXTRACTING' } : state;
    case 'DocumentTextReady':
      return {
        ...state,
        status: 'PENDING_INDEX',
        indexFailure: null,
        textRef: e.data.textRef,
        textBytes: e.data.textBytes,
        textRevision: e.data.textRevision,
        textRetained: true,
      };
    case 'DocumentIndexed':
    case 'DocumentIndexSkipped':
      return e.data.textRevision === state.textRevision ? { ...state, status: e.data.status } : state;
    case 'DocumentFailed':
      return { ...state, status: 'FAILED', indexFailure: { code: e.data.code, message: e.data.message } };
    case 'DocumentTextDiscarded':
      return e.data.textRevision === state.textRevision ? { ...state, textRetained: false } : state;
    case 'DocumentDeleted':
      return { exists: false, deleted: true };
    default:
      return unexpected(e, state);
  }
}

const initialState = (): DocumentState => ({ exists: false });

/**
 * A document's state from its stream, for readers that hold any stored event (search projector, upload poller, host
 * API).
 */
export const documentAggregate = {
  initialState,
  evolve: evolve as (state: DocumentState, e: DomainEvent, m?: EventMetadata) => DocumentState,
};

function live(state: DocumentState): LiveDocument {
  if (!state.exists) throw notFound();
  return state;
}

/** The stored form of a schema-bound payload: sensitive values sealed, their blind index beside it (as records do). */
function stored(
  sealing: PayloadSealing,
  scope: [string, string],
  schema: BoundSchema | undefined,
  payload: Record<string, unknown>,
) {
  if (!schema) return { payload };
  const def = schema.definition;
  const blind = sealing.blind([...scope, def.typeName], def, payload);
  return { payload: sealing.seal(def, payload), ...(Object.keys(blind).length ? { blindIndex: blind } : {}) };
}

function create(
  sealing: PayloadSealing,
  cmd: Extract<DocumentCommand, { type: 'CreateDocument' }>,
  state: DocumentState,
): DocumentEvent[] {
  if (state.exists || state.deleted) throw new InternalError('document id reused');
  const def = cmd.schema?.definition;
  // The route refuses these before any read (binding the schema); the decision holds them too.
  if (def?.active === false) throw invalid('The schema is inactive: new documents are rejected');
  if (def && !def.allowedSurfaces.includes('document')) throw invalid('The schema does not allow the document surface');
  const indexMode = documentIndexMode(cmd.indexMode, def);
  checkDocumentPayload(def, cmd.payload, { enforceRequired: true });
  const events: DocumentEvent[] = [
    {
      type: 'DocumentCreated',
      data: {
        documentId: cmd.documentId,
        title: cmd.title,
        source: cmd.source,
        indexMode,
        storeText: cmd.source === 'text' ? true : cmd.storeText,
        folderId: cmd.folderId,
        schemaId: cmd.schema?.schemaId ?? null,
        schemaVersion: cmd.schema?.schemaVersion ?? null,
        typeName: def?.typeName ?? null,
        userId: cmd.userId,
        scopes: cmd.scopes,
        externalId: cmd.externalId ?? null,
        fileName: cmd.file?.fileName ?? null,
        fileType: cmd.file?.fileType ?? null,
        uploadId: cmd.file?.uploadId ?? null,
        ...stored(sealing, [cmd.tenantId, cmd.contextId], cmd.schema, cmd.payload),
      },
    },
  ];
  if (cmd.text)
    events.push({
      type: 'DocumentTextReady',
      data: {
        documentId: cmd.documentId,
        textRef: cmd.text.textRef,
        textBytes: cmd.text.textBytes,
        indexMode,
        textRevision: 1,
      },
    });
  return events;
}

function change(
  sealing: PayloadSealing,
  cmd: Extract<DocumentCommand, { type: 'ChangeDocument' }>,
  state: DocumentState,
): DocumentEvent[] {
  const cur = live(state);
  const b = cmd.body;
  checkChangeBody(cmd.kind, b, cur);
  if (Array.isArray(b.scopes) && b.scopes.length > 2) throw invalid('scopes: at most 2');
  const payload = changedPayload(sealing, cmd.kind, b, cur.payload);
  checkDocumentPayload(cmd.schema?.definition, payload, { enforceRequired: false });
  const events: DocumentEvent[] = [
    {
      type: 'DocumentUpdated',
      data: {
        documentId: cur.id,
        title: (b.title as string | undefined) ?? cur.title,
        folderId: (b.folderId as string | undefined) ?? cur.folderId,
        ...stored(sealing, [cur.tenantId!, cur.contextId!], cmd.schema, payload),
        schemaId: cmd.schema?.schemaId ?? null,
        schemaVersion: cmd.schema?.schemaVersion ?? null,
        typeName: cmd.schema?.definition.typeName ?? null,
        userId: cmd.userId !== undefined ? cmd.userId : cur.userId,
        scopes: cmd.scopes ?? cur.scopes,
        change: cmd.kind,
      },
    },
  ];
  if (cmd.text)
    events.push({
      type: 'DocumentTextReady',
      data: {
        documentId: cur.id,
        textRef: cmd.text.textRef,
        textBytes: cmd.text.textBytes,
        indexMode: cur.indexMode,
        textRevision: cur.textRevision + 1,
      },
    });
  return events;
}

/**
 * The document decider. `sealing` seals the sensitive values of a schema-bound
 * payload and computes their blind index inside the decision: the events it
 * returns are the events stored. Processing events (upload, extraction,
 * indexing) are decided by the document processing decider (./processing.ts).
 */
export function documentDecider(sealing: PayloadSealing): Decider<DocumentState, DocumentCommand, DocumentEvent> {
  return {
    initialState,
    evolve,
    decide(cmd, state) {
      switch (cmd.type) {
        case 'CreateDocument':
          return create(sealing, cmd, state);
        case 'RequestUpload': {
          const cur = live(state);
          if (cur.source !== 'file') throw invalid('Only a file document takes an upload');
          return [
            {
              type: 'DocumentUploadRequested',
              data: { documentId: cur.id, uploadId: cmd.uploadId, fileName: cmd.fileName, fileType: cmd.fileType },
            },
          ];
        }
        case 'ChangeDocument':
          return change(sealing, cmd, state);
        case 'DeleteDocument': {
          const cur = live(state);
          if (cmd.expectedVersion !== undefined && cmd.expectedVersion !== cur.version) throw versionConflict();
          return [{ type: 'DocumentDeleted', data: { documentId: cur.id, externalId: cur.externalId } }];
        }
        default:
          return assertNever(cmd);
      }
    },
  };
}
