import { createHash } from 'node:crypto';
import { type DomainEvent, type EventMetadata, type FolderResponse, IMMUTABLE_FOLDER_KEYS, InternalError, invalid, notFound, PATCHABLE_FOLDER_KEYS, patchFolderFields, type Principal, versionConflict } from '@svc/contracts';
import { withinDataScope } from '../tenancy/access';

export interface LiveFolder {
  exists: true;
  id: string;
  tenantId: string | null;
  contextId: string | null;
  name: string;
  description: string | null;
  parentFolderId: string | null;
  slug: string;
  depth: number;
  isProtected: boolean;
  userId: string | null;
  scopes: string[];
  createdAt: string;
  lastModified: string;
  version: number;
}
export type FolderState = { exists: false; deleted?: boolean } | LiveFolder;

export const ROOT_FOLDER = { name: 'Root', slug: 'root' } as const;
/** Room left after a derived slug for a `-<n>` suffix (slugs are at most 64 characters). */
const SLUG_BASE_MAX = 56;

/**
 * The id of a context's root folder, derived from tenant and context so that
 * every process agrees on it without coordination (UUID layout, version 8).
 */
export function rootFolderId(tenantId: string, contextId: string): string {
  const h = createHash('sha256').update(`root-folder\u0000${tenantId}\u0000${contextId}`).digest('hex');
  const variant = ((parseInt(h[16], 16) & 0x3) | 0x8).toString(16);
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-8${h.slice(13, 16)}-${variant}${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

/** Slug from a name: accents dropped, lowercase, every run of other characters one '-', trimmed; 'folder' when nothing is left. */
export function deriveSlug(name: string): string {
  const s = name
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, SLUG_BASE_MAX)
    .replace(/-+$/, '');
  return s || 'folder';
}

/** The n-th candidate for a derived slug: `base`, `base-2`, `base-3`, ... */
export const slugCandidate = (base: string, n: number) => (n <= 1 ? base : `${base}-${n}`);

export const folderAggregate = {
  initialState: (): FolderState => ({ exists: false }),
  evolve(state: FolderState, e: DomainEvent, m?: EventMetadata): FolderState {
    const at = m?.occurredAt ?? '';
    switch (e.type) {
      case 'FolderCreated': {
        const { folderId, ...d } = e.data;
        return { exists: true, id: folderId, tenantId: m?.tenantId ?? null, contextId: m?.contextId ?? null, ...d, createdAt: at, lastModified: at, version: 1 };
      }
      case 'FolderUpdated': {
        if (!state.exists) return state;
        const { folderId: _, change: __, ...d } = e.data;
        return { ...state, ...d, lastModified: at, version: state.version + 1 };
      }
      case 'FolderDeleted':
        return { exists: false, deleted: true };
      default:
        return state;
    }
  },
};

/**
 * Whether a principal may see a folder: same tenant and context, and inside the
 * credential's data scope. The context root belongs to nobody and is visible to
 * every caller of its context.
 */
export function canSeeFolder(p: Principal, f: Pick<LiveFolder, 'tenantId' | 'contextId' | 'isProtected' | 'userId' | 'scopes'>): boolean {
  if (f.tenantId !== p.tenantId || f.contextId !== p.contextId) return false;
  return f.isProtected || withinDataScope(p, f);
}

export function decideCreateRoot(folderId: string, state: FolderState): DomainEvent[] {
  if (state.exists || state.deleted) return [];
  return [
    {
      type: 'FolderCreated',
      data: { folderId, name: ROOT_FOLDER.name, description: null, parentFolderId: null, slug: ROOT_FOLDER.slug, depth: 0, isProtected: true, userId: null, scopes: [] },
    },
  ];
}

/**
 * When a context's root is created: a millisecond before its context, so the
 * root lists before every folder of the context. The root comes into being with
 * its context (same append); a context created before that has its root read
 * as `implicitRootFolder` until its first folder write materialises it.
 */
export const rootCreatedAt = (contextCreatedAt: string): string => new Date(Date.parse(contextCreatedAt) - 1).toISOString();

/**
 * The root of a context whose root was never recorded (created before roots came
 * with their contexts), exactly as `decideCreateRoot` will record it: reads show
 * it without writing anything.
 */
export function implicitRootFolder(tenantId: string, contextId: string, contextCreatedAt: string): LiveFolder {
  const at = rootCreatedAt(contextCreatedAt);
  return {
    exists: true,
    id: rootFolderId(tenantId, contextId),
    tenantId,
    contextId,
    name: ROOT_FOLDER.name,
    description: null,
    parentFolderId: null,
    slug: ROOT_FOLDER.slug,
    depth: 0,
    isProtected: true,
    userId: null,
    scopes: [],
    createdAt: at,
    lastModified: at,
    version: 1,
  };
}

export interface CreateFolderCommand {
  folderId: string;
  name: string;
  description?: string;
  /** The parent, already loaded (the context root when the request named none). */
  parent: LiveFolder;
  slug: string;
  userId: string | null;
  scopes: string[];
}

export function decideCreateFolder(cmd: CreateFolderCommand, state: FolderState): DomainEvent[] {
  if (state.exists || state.deleted) throw new InternalError('folder id reused');
  return [
    {
      type: 'FolderCreated',
      data: {
        folderId: cmd.folderId,
        name: cmd.name,
        description: cmd.description ?? null,
        parentFolderId: cmd.parent.id,
        slug: cmd.slug,
        depth: cmd.parent.depth + 1,
        isProtected: false,
        userId: cmd.userId,
        scopes: cmd.scopes,
      },
    },
  ];
}

export interface ChangeFolderCommand {
  kind: 'put' | 'patch';
  body: Record<string, unknown>;
  /** Ownership after identity auto-assign (undefined: unchanged). */
  userId?: string | null;
  scopes?: string[];
}

/** Rejections of a PATCH body that do not depend on the folder (run before ownership stamping). */
export function checkFolderPatch(b: Record<string, unknown>): void {
  for (const k of IMMUTABLE_FOLDER_KEYS) if (k in b) throw invalid(k === 'slug' ? 'slug is immutable' : 'parentFolderId cannot be changed: folders cannot be moved');
  for (const k of Object.keys(b)) {
    if (!(PATCHABLE_FOLDER_KEYS as readonly string[]).includes(k)) throw invalid(`${k} is not a patchable field`);
    if (b[k] === null) throw invalid(`${k} cannot be null in a PATCH`);
  }
  const r = patchFolderFields.safeParse(b);
  if (!r.success) throw invalid(`Invalid body: ${r.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`);
}

/** PUT replaces name and description; PATCH changes the keys it names. Rejections change nothing. */
export function decideChangeFolder(cmd: ChangeFolderCommand, state: FolderState): DomainEvent[] {
  if (!state.exists) throw notFound();
  if (state.isProtected) throw invalid('The context root folder cannot be changed');
  const b = cmd.body;
  if (cmd.kind === 'patch') checkFolderPatch(b);
  else {
    if (b.slug !== undefined && b.slug !== state.slug) throw invalid('slug is immutable');
    if (b.parentFolderId !== undefined && b.parentFolderId !== state.parentFolderId) throw invalid('parentFolderId cannot be changed: folders cannot be moved');
  }
  if (b.expectedVersion !== undefined && b.expectedVersion !== state.version) throw versionConflict();
  const name = cmd.kind === 'put' ? (b.name as string) : ((b.name as string | undefined) ?? state.name);
  const description = cmd.kind === 'put' ? ((b.description as string | undefined) ?? null) : 'description' in b ? (b.description as string) : state.description;
  return [
    {
      type: 'FolderUpdated',
      data: {
        folderId: state.id,
        name,
        description,
        userId: cmd.userId !== undefined ? cmd.userId : state.userId,
        scopes: cmd.scopes ?? state.scopes,
        change: cmd.kind,
      },
    },
  ];
}

/** `items` counts everything in the folder (sub-folders, records, documents), readable by the caller or not. */
export function decideDeleteFolder(state: FolderState, expectedVersion: number | undefined, items: number): DomainEvent[] {
  if (!state.exists) throw notFound();
  if (state.isProtected) throw invalid('The context root folder cannot be deleted');
  if (expectedVersion !== undefined && expectedVersion !== state.version) throw versionConflict();
  if (items > 0) throw invalid('The folder is not empty: delete its sub-folders and move or delete its records and documents first');
  return [{ type: 'FolderDeleted', data: { folderId: state.id, parentFolderId: state.parentFolderId, slug: state.slug } }];
}

/** The response shape of a folder (also the state of its version rows). */
export function folderView(f: Omit<LiveFolder, 'exists' | 'tenantId' | 'contextId'>): FolderResponse {
  return {
    id: f.id,
    name: f.name,
    description: f.description,
    parentFolderId: f.parentFolderId,
    slug: f.slug,
    depth: f.depth,
    isProtected: f.isProtected,
    userId: f.userId,
    scopes: f.scopes,
    createdAt: f.createdAt,
    lastModified: f.lastModified,
    version: f.version,
  };
}
