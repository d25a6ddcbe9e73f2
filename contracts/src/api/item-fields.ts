import { z } from 'zod';
import { scopes } from '../common';

/** Fields and filters the items of a context (records, documents, folders) share. */

/** Who owns an item written through the API (records, documents, folders): a user id and up to two scopes. */
export const ownerFields = {
  userId: z.string().min(1).max(128).optional(),
  scopes: scopes.optional(),
};

/** A list filter naming one `<namespace>:<value>` scope: the items holding it. */
export const scopeFilter = z.string().min(3).max(300).optional();

/** The owner filters of the context lists (records, documents, folders): the owning user, or one scope. */
export const ownerFilters = {
  userId: z.string().min(1).max(128).optional(),
  scope: scopeFilter,
};

/** When a document or folder was created and last modified, and its version (the count of its changes). */
export const modifiedStamp = {
  createdAt: z.string(),
  lastModified: z.string(),
  version: z.number().int(),
};

/** Why indexing failed, only when the index status is FAILED. */
export const indexFailure = z.object({ code: z.string(), message: z.string() }).optional();
