import { createHash } from 'node:crypto';
import {
  type EventMetadata,
  type FolderResponse,
  IMMUTABLE_FOLDER_KEYS,
  InternalError,
  invalid,
  notFound,
  PATCHABLE_FOLDER_KEYS,
  patchFolderFields,
  type Principal,
  versionConflict,
} from '@svc/contracts';
import { assertNever, type Decider, type EventsOf, nextVersion, unexpected } from '../shared/decider';
import { checkPatchBody, type PatchRules } from '../shared/patch-body';
import { stampOwnership, withinDataScope } from '../tenancy/access';

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

/**
 * Slug from a name: accents dropped, lowercase, every run of other characters one '-', trimmed; 'folder' when nothing
 * is left.
 */
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

/**
 * Whether a principal may see a folder: same tenant and context, and inside the
 * credential's data scope. The context root belongs to nobody and is visible to
 * every caller of its context.
 */
export function canSeeFolder(
  p: Principal,
  f: Pick<LiveFolder, 'tenantId' | 'contextId' | 'isProtected' | 'userId' | 'scopes'>,
): boolean {
  if (f.tenantId !== p.tenantId || f.contextId !== p.contextId) return false;
  return f.isProtected || withinDataScope(p, f);
}

/**
 * When a context's root is created: a millisecond before its context, so the
 * root lists before every folder of the context. The root comes into being with
 * its context (same append); a context created before that has its root read
 * as `implicitRootFolder` until its first folder write materialises it.
 */
export const rootCreatedAt = (contextCreatedAt: string): string =>
  new Date(Date.parse(contextCreatedAt) - 1).toISOString();

/**
 * The root of a context whose root was never recorded (created before roots came
 * with their contexts), exactly as `CreateRootFolder` will record it: reads show
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

export type FolderEvent = EventsOf<'FolderCreated' | 'FolderUpdated' | 'FolderDeleted'>;

export type FolderCommand =
  /** The context root, derived id; nothing when it is (or was) recorded already. */
  | { type: 'CreateRootFolder'; folderId: string }
  | {
      type: 'CreateFolder';
      folderId: string;
      name: string;
      description?: string;
      /** The parent, already loaded (the context root when the request named none). */
      parent: LiveFolder;
      /** A free slug among the parent's children (its reservation is claimed in the same append). */
      slug: string;
      userId: string | null;
      scopes: string[];
    }
  /** PUT replaces name and description; PATCH changes the keys it names. */
  | { type: 'ChangeFolder'; actor: Principal; kind: 'put' | 'patch'; body: Record<string, unknown> }
  /** `items` counts everything in the folder (sub-folders, records, documents), readable by the caller or not. */
  | { type: 'DeleteFolder'; actor: Principal; expectedVersion?: number; items: number };

/** What a folder PATCH may hold (checked before ownership stamping). */
const FOLDER_PATCH: PatchRules = {
  immutable: IMMUTABLE_FOLDER_KEYS,
  fixed: (k) => (k === 'slug' ? 'slug is immutable' : 'parentFolderId cannot be changed: folders cannot be moved'),
  patchable: PATCHABLE_FOLDER_KEYS,
  fields: patchFolderFields,
};

/** A live folder the actor can see; anything else is the same 404 (a hidden folder's existence is not revealed). */
function visible(actor: Principal, state: FolderState): LiveFolder {
  if (!state.exists || !canSeeFolder(actor, state)) throw notFound();
  return state;
}

function decideChange(cmd: Extract<FolderCommand, { type: 'ChangeFolder' }>, state: FolderState): FolderEvent[] {
  const cur = visible(cmd.actor, state);
  const b = cmd.body;
  // Body rejections come before ownership checks (a 400 before a 403), the root's before both.
  if (cmd.kind === 'patch' && !cur.isProtected) checkPatchBody(b, FOLDER_PATCH);
  const own =
    'userId' in b || 'scopes' in b
      ? stampOwnership(cmd.actor, { userId: b.userId as string | undefined, scopes: b.scopes as string[] | undefined })
      : undefined;
  if (cur.isProtected) throw invalid('The context root folder cannot be changed');
  if (cmd.kind === 'put') {
    if (b.slug !== undefined && b.slug !== cur.slug) throw invalid('slug is immutable');
    if (b.parentFolderId !== undefined && b.parentFolderId !== cur.parentFolderId)
      throw invalid('parentFolderId cannot be changed: folders cannot be moved');
  }
  if (b.expectedVersion !== undefined && b.expectedVersion !== cur.version) throw versionConflict();
  const name = cmd.kind === 'put' ? (b.name as string) : ((b.name as string | undefined) ?? cur.name);
  const description =
    cmd.kind === 'put'
      ? ((b.description as string | undefined) ?? null)
      : 'description' in b
        ? (b.description as string)
        : cur.description;
  return [
    {
      type: 'FolderUpdated',
      data: {
        folderId: cur.id,
        name,
        description,
        userId: own && 'userId' in b ? own.userId : cur.userId,
        scopes: (b.scopes as string[] | undefined) ?? cur.scopes,
        change: cmd.kind,
      },
    },
  ];
}

export const folderDecider: Decider<FolderState, FolderCommand, FolderEvent> = {
  initialState: (): FolderState => ({ exists: false }),

  decide(cmd: FolderCommand, state: FolderState): FolderEvent[] {
    switch (cmd.type) {
      case 'CreateRootFolder':
        if (state.exists || state.deleted) return [];
        return [
          {
            type: 'FolderCreated',
            data: {
              folderId: cmd.folderId,
              name: ROOT_FOLDER.name,
              description: null,
              parentFolderId: null,
              slug: ROOT_FOLDER.slug,
              depth: 0,
              isProtected: true,
              userId: null,
              scopes: [],
            },
          },
        ];
      case 'CreateFolder':
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
      case 'ChangeFolder':
        return decideChange(cmd, state);
      case 'DeleteFolder': {
        const cur = visible(cmd.actor, state);
        if (cur.isProtected) throw invalid('The context root folder cannot be deleted');
        if (cmd.expectedVersion !== undefined && cmd.expectedVersion !== cur.version) throw versionConflict();
        if (cmd.items > 0)
          throw invalid(
            'The folder is not empty: delete its sub-folders and move or delete its records and documents first',
          );
        return [
          { type: 'FolderDeleted', data: { folderId: cur.id, parentFolderId: cur.parentFolderId, slug: cur.slug } },
        ];
      }
      default:
        return assertNever(cmd);
    }
  },

  /** `metadata` gives the folder its tenant, context and times (createdAt, lastModified). */
  evolve(state: FolderState, e: FolderEvent, m?: EventMetadata): FolderState {
    const at = m?.occurredAt ?? '';
    switch (e.type) {
      case 'FolderCreated': {
        const { folderId, ...d } = e.data;
        return {
          exists: true,
          id: folderId,
          tenantId: m?.tenantId ?? null,
          contextId: m?.contextId ?? null,
          ...d,
          createdAt: at,
          lastModified: at,
          version: 1,
        };
      }
      case 'FolderUpdated': {
        const { folderId: _, change: __, ...d } = e.data;
        return nextVersion(state, { ...d, lastModified: at });
      }
      case 'FolderDeleted':
        return { exists: false, deleted: true };
      default:
        return unexpected(e, state);
    }
  },
};

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
