import {
  createFolderBody,
  createRecordBody,
  ingestDocumentBody,
  invalid,
  notImplemented,
  patchDocumentBody,
  patchFolderBody,
  patchRecordBody,
  putDocumentBody,
  putFolderBody,
  putRecordBody,
  type RequestMeta,
  ServiceError,
} from '@svc/contracts';
import {
  canReach,
  canSeeFolder,
  type CommandDeps,
  documentAggregate,
  documentView,
  type FolderContents,
  folderDecider,
  folderView,
  grants,
  loadAggregate,
  payloadBytes,
  recordAggregate,
  recordView,
  streams,
} from '@svc/domain';
import type { z } from 'zod';
import { type DocumentDeps, changeDocument, createDocument, deleteDocument } from '../documents/commands';
import { changeFolder, createFolder, deleteFolder } from '../folders/routes';
import { changeRecord, createRecord, deleteRecord } from '../records/commands';
import { loadSchema } from '../schemas/routes';
import type { ReadRoutes } from './read-routes';
import type { StagingEventStore } from './staging-store';

/**
 * The host objects a script calls (decisions §7; docs/scripts.md "Host API").
 * Each method takes and returns the REST shapes and runs the REST command code
 * with the execution's staging deps, after the same permission check as the
 * route (a refusal is AUTHORIZATION_DENIED) and within the same data scopes.
 * Lists and lookups run the REST read routes on the committed read models and
 * then apply the script's own staged writes (spec "Scripts", rule 5): rows it
 * deleted are dropped, rows it changed show the staged content, rows it
 * created are not listed.
 */
export interface HostContext {
  deps: CommandDeps;
  staging: StagingEventStore;
  meta: RequestMeta;
  /** Document commands (their blob store defers deletes until the commit). */
  documents?: DocumentDeps;
  /** Folder contents on the read models (a folder delete needs the folder empty). */
  folderContents?: FolderContents;
  reads?: ReadRoutes;
}

const denied = () => new ServiceError('AUTHORIZATION_DENIED', 'The script call was denied.');
const unavailable = (what: string) => notImplemented(`${what} is not available to scripts in this process`);

function need(meta: RequestMeta, permission: string) {
  if (!grants(meta.principal.allowedActions, permission)) throw denied();
}

function parse<T>(schema: z.ZodType<T>, value: unknown, what: string): T {
  const r = schema.safeParse(value ?? {});
  if (!r.success)
    throw invalid(
      `Invalid ${what}: ${r.error.issues
        .slice(0, 5)
        .map((i) => (i.path.length ? `${i.path.join('.')}: ${i.message}` : i.message))
        .join('; ')}`,
    );
  return r.data;
}

const idArg = (v: unknown): string => {
  if (typeof v !== 'string' || v.length === 0 || v.length > 200) throw invalid('An id string is required');
  return v;
};

async function getRecord(c: HostContext, id: string) {
  const { state } = await loadAggregate(c.deps.store, streams.record(id), recordAggregate);
  if (!state.exists || !canReach(c.meta.principal, state)) return null;
  const schema = await loadSchema(c.deps.store, c.meta.principal, state.schemaId).catch(() => undefined);
  return recordView({ ...state, payload: c.deps.sealer.unseal(state.payload) }, schema?.definition, {
    full: true,
    bytes: payloadBytes(state.payload),
  });
}

async function getDocument(c: HostContext, id: string) {
  const { state } = await loadAggregate(c.deps.store, streams.document(id), documentAggregate);
  if (!state.exists || !canReach(c.meta.principal, state)) return null;
  const schema = state.schemaId
    ? await loadSchema(c.deps.store, c.meta.principal, state.schemaId).catch(() => undefined)
    : undefined;
  return documentView({ ...state, payload: c.deps.sealer.unseal(state.payload) }, schema?.definition, { full: true });
}

async function getFolder(c: HostContext, id: string) {
  const { state } = await loadAggregate(c.deps.store, streams.folder(id), folderDecider);
  return state.exists && canSeeFolder(c.meta.principal, state) ? folderView(state) : null;
}

/** A page of committed rows as this execution sees them: its deletes dropped, its changes shown. */
async function overlay(
  c: HostContext,
  page: unknown,
  streamOf: (id: string) => string,
  get: (id: string) => Promise<unknown>,
) {
  if (!page || typeof page !== 'object' || !Array.isArray((page as { data?: unknown }).data)) return page;
  const p = page as { data: Array<{ id?: unknown }>; nextCursor?: unknown };
  const data: unknown[] = [];
  for (const row of p.data) {
    const staged = typeof row.id === 'string' ? c.staging.staged(streamOf(row.id)) : undefined;
    if (!staged?.length) data.push(row);
    else if (!/Deleted$/.test(staged[staged.length - 1].type)) {
      const now = await get(row.id as string);
      if (now) data.push(now);
    }
  }
  return { ...p, data };
}

const read = (c: HostContext, method: 'GET' | 'POST', url: string, input: { query?: unknown; body?: unknown }) => {
  if (!c.reads) throw unavailable(`${method} ${url}`);
  return c.reads(method, url, input, c.meta);
};

const docs = (c: HostContext): DocumentDeps => {
  if (!c.documents) throw unavailable('documents');
  return c.documents;
};

type Method = (c: HostContext, args: unknown[]) => Promise<unknown>;

/**
 * `get`, `update` (PUT), `patch` and `delete` of one aggregate by id, each needing
 * `<resource>:r`, `:u` or `:d` as its HTTP route does.
 */
function byIdMethods(
  resource: string,
  what: string,
  bodies: { put: z.ZodTypeAny; patch: z.ZodTypeAny },
  ops: {
    get: (c: HostContext, id: string) => Promise<unknown>;
    change: (c: HostContext, id: string, kind: 'put' | 'patch', body: Record<string, unknown>) => Promise<unknown>;
    remove: (c: HostContext, id: string) => Promise<unknown>;
  },
): Record<'get' | 'update' | 'patch' | 'delete', Method> {
  return {
    async get(c, [id]) {
      need(c.meta, `${resource}:r`);
      return ops.get(c, idArg(id));
    },
    async update(c, [id, body]) {
      need(c.meta, `${resource}:u`);
      return ops.change(c, idArg(id), 'put', parse(bodies.put, body, what) as Record<string, unknown>);
    },
    async patch(c, [id, body]) {
      need(c.meta, `${resource}:u`);
      return ops.change(c, idArg(id), 'patch', parse(bodies.patch, body, 'patch') as Record<string, unknown>);
    },
    async delete(c, [id]) {
      need(c.meta, `${resource}:d`);
      await ops.remove(c, idArg(id));
      return null;
    },
  };
}

const HOST: Record<string, Record<string, Method>> = {
  records: {
    async create(c, [body]) {
      need(c.meta, 'records:c');
      const out = await createRecord(c.deps, parse(createRecordBody, body, 'record'), c.meta);
      return recordView(out.record, out.schema.definition, { full: true });
    },
    ...byIdMethods(
      'records',
      'record',
      { put: putRecordBody, patch: patchRecordBody },
      {
        get: getRecord,
        change: (c, id, kind, body) => changeRecord(c.deps, id, kind, body, c.meta),
        remove: (c, id) => deleteRecord(c.deps, id, undefined, c.meta),
      },
    ),
    async list(c, [query]) {
      return overlay(c, await read(c, 'GET', '/v1/records', { query }), streams.record, (id) => getRecord(c, id));
    },
    async lookup(c, [query]) {
      return overlay(c, await read(c, 'POST', '/v1/records/lookup', { body: query }), streams.record, (id) =>
        getRecord(c, id),
      );
    },
  },
  documents: {
    async create(c, [body]) {
      need(c.meta, 'documents:c');
      const out = await createDocument(docs(c), parse(ingestDocumentBody, body, 'document'), 'text', c.meta);
      return documentView(out.document, out.schema?.definition, { full: true });
    },
    ...byIdMethods(
      'documents',
      'document',
      { put: putDocumentBody, patch: patchDocumentBody },
      {
        get: getDocument,
        change: (c, id, kind, body) => changeDocument(docs(c), id, kind, body, c.meta),
        remove: (c, id) => deleteDocument(docs(c), id, undefined, c.meta),
      },
    ),
    async list(c, [query]) {
      return overlay(c, await read(c, 'GET', '/v1/documents', { query }), streams.document, (id) => getDocument(c, id));
    },
  },
  folders: {
    async create(c, [body]) {
      need(c.meta, 'folders:c');
      return folderView(await createFolder(c.deps, parse(createFolderBody, body, 'folder'), c.meta));
    },
    ...byIdMethods(
      'folders',
      'folder',
      { put: putFolderBody, patch: patchFolderBody },
      {
        get: getFolder,
        change: (c, id, kind, body) => changeFolder(c.deps, id, kind, body, c.meta),
        remove: async (c, id) => {
          if (!c.folderContents) throw unavailable('folders.delete');
          return deleteFolder(c.deps, c.folderContents, id, undefined, c.meta);
        },
      },
    ),
    async list(c, [query]) {
      return overlay(c, await read(c, 'GET', '/v1/folders', { query }), streams.folder, (id) => getFolder(c, id));
    },
  },
};

/** The methods each host object offers (the sandbox defines exactly these). */
export const HOST_METHODS: Record<string, string[]> = Object.fromEntries(
  Object.entries(HOST).map(([k, v]) => [k, Object.keys(v)]),
);

/** The dispatcher the sandbox's host calls reach: JSON in, JSON out. */
export function hostDispatcher(c: HostContext) {
  return async (obj: string, method: string, argsJson: string): Promise<string | undefined> => {
    const fn =
      Object.prototype.hasOwnProperty.call(HOST, obj) && Object.prototype.hasOwnProperty.call(HOST[obj], method)
        ? HOST[obj][method]
        : undefined;
    if (!fn) throw invalid(`${obj}.${method} is not a host function`);
    let args: unknown;
    try {
      args = JSON.parse(argsJson);
    } catch {
      throw invalid('The arguments are not JSON');
    }
    const out = await fn(c, Array.isArray(args) ? args : []);
    return out === undefined ? undefined : JSON.stringify(out);
  };
}
