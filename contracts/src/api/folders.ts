import { z } from 'zod';
import { scopes } from '../common';
import { modifiedStamp, ownerFields, ownerFilters } from './item-fields';

/** Lowercase letters, digits and hyphens; 1-64 characters. */
export const FOLDER_SLUG_RE = /^[a-z0-9-]{1,64}$/;
export const folderSlug = z.string().regex(FOLDER_SLUG_RE, 'must be 1-64 lowercase letters, digits or hyphens');
export const folderName = z.string().min(1).max(200).regex(/\S/, 'must not be blank');
const folderDescription = z.string().max(2000);
const id = z.string().min(1).max(128);

export const createFolderBody = z
  .object({
    name: folderName,
    description: folderDescription.optional(),
    /** Create only; omit to create under the context root. */
    parentFolderId: id.optional(),
    slug: folderSlug.optional(),
    ...ownerFields,
    /** Ignored on create. */
    expectedVersion: z.number().int().optional(),
  })
  .strict();
export type CreateFolder = z.infer<typeof createFolderBody>;

/**
 * PUT replaces name and description (omitted description clears it); ownership as for records; `slug` /
 * `parentFolderId` may only repeat the current value.
 */
export const putFolderBody = createFolderBody;
export type PutFolder = z.infer<typeof putFolderBody>;

/** PATCH (RFC 7386). Immutable keys are listed so their presence is a 400 with a clear message. */
export const PATCHABLE_FOLDER_KEYS = ['name', 'description', 'userId', 'scopes', 'expectedVersion'] as const;
export const IMMUTABLE_FOLDER_KEYS = ['slug', 'parentFolderId'] as const;
export const patchFolderBody = z.record(z.string(), z.unknown());
/** The types of the patchable keys (presence, immutability and nulls are checked first). */
export const patchFolderFields = z
  .object({ name: folderName, description: folderDescription, userId: id, scopes, expectedVersion: z.number().int() })
  .partial()
  .strict();

/** A folder as FolderCreated records it and its response shows it. */
export const folderFields = {
  name: z.string(),
  description: z.string().nullable(),
  /** Null only for the context root. */
  parentFolderId: z.string().nullable(),
  slug: z.string(),
  depth: z.number().int(),
  isProtected: z.boolean(),
  userId: z.string().nullable(),
  scopes: z.array(z.string()),
};

export const folderResponse = z.object({
  id: z.string(),
  ...folderFields,
  ...modifiedStamp,
});
export type FolderResponse = z.infer<typeof folderResponse>;

export const listFoldersQuery = z.object({
  ...ownerFilters,
  parentFolderId: id.optional(),
  startFrom: z.string().optional(),
});
