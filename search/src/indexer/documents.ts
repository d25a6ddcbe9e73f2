import type { SchemaDefinition } from '@svc/contracts';
import {
  type AttrScalar,
  type AttrValue,
  type CatalogueItem,
  documentAggregate,
  type DocumentState,
  type EventStore,
  filterAttributes,
  type LiveDocument,
  streams,
} from '@svc/domain';

/**
 * What of a document the search index sees (used by the search projector,
 * ./indexer.ts). Only the body text becomes passages; the title is treated as
 * sensitive (it is often the file name) and never reaches an index, the
 * metadata or a snippet. Filter attributes: the built-in item fields
 * (`typeName` of the bound schema, `externalId`, `schemaId`, `indexMode`,
 * `fileType`), the bound schema's filterable non-sensitive fields, and every
 * undeclared top-level payload key whose value is a scalar or an array of
 * scalars (documents let undeclared keys through). Declared sensitive or
 * non-filterable fields are never attributes.
 */
export function documentAttributes(
  d: LiveDocument,
  def: Pick<SchemaDefinition, 'fields'> | undefined,
): Record<string, AttrValue> {
  const attrs = filterAttributes(def, d.payload, {
    typeName: d.typeName,
    externalId: d.externalId,
    schemaId: d.schemaId,
    indexMode: d.indexMode,
    fileType: d.fileType,
  });
  const declared = new Set((def?.fields ?? []).map((f) => f.fieldId));
  const scalar = (x: unknown): x is AttrScalar =>
    typeof x === 'string' || typeof x === 'boolean' || (typeof x === 'number' && Number.isFinite(x));
  for (const [k, v] of Object.entries(d.payload)) {
    if (declared.has(k)) continue;
    if (scalar(v)) attrs[k] = v;
    else if (Array.isArray(v) && v.length && v.every(scalar)) attrs[k] = v as AttrScalar[];
  }
  return attrs;
}

/** The catalogue row of a document (its passages come from its text). */
export function documentCatalogueItem(
  d: LiveDocument,
  def: Pick<SchemaDefinition, 'fields'> | undefined,
  o: { accountId: string | null; revision: number },
): CatalogueItem {
  const attrs = documentAttributes(d, def);
  return {
    itemId: d.id,
    tenantId: d.tenantId!,
    contextId: d.contextId!,
    accountId: o.accountId,
    sourceType: 'document',
    typeName: d.typeName,
    schemaId: d.schemaId,
    externalId: d.externalId,
    indexMode: d.indexMode,
    folderId: d.folderId,
    userId: d.userId,
    scopes: d.scopes,
    attrs,
    createdAt: d.createdAt,
    metadata: {
      typeName: d.typeName,
      schemaId: d.schemaId,
      externalId: d.externalId,
      fileType: d.fileType,
      indexMode: d.indexMode,
      folderId: d.folderId,
      userId: d.userId,
      scopes: d.scopes,
      attributes: attrs,
    },
    revision: o.revision,
    vectors: 0,
  };
}

/** A document's current state, folded from its stream, and the stream revision (-1 when empty). */
export async function loadDocument(
  store: EventStore,
  documentId: string,
): Promise<{ state: DocumentState; revision: number }> {
  const events = await store.readStream(streams.document(documentId));
  const state = events.reduce((s, e) => documentAggregate.evolve(s, e, e.metadata), documentAggregate.initialState());
  return { state, revision: events.length ? events[events.length - 1].revision : -1 };
}
