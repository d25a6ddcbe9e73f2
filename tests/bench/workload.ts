import type { SchemaDefinition } from '@svc/contracts';

/**
 * The record shape every scenario uses: a small schema (one non-unique lookup
 * on `tag`, no externalId, not searchable -> indexMode NONE), so a create
 * appends to exactly one stream and writes one lookup-index row.
 */
export const BENCH_SCHEMA: SchemaDefinition = {
  typeName: 'bench_item',
  displayName: 'Bench item',
  allowedSurfaces: ['record'],
  fields: [
    { fieldId: 'name', fieldType: 'string', required: true },
    { fieldId: 'qty', fieldType: 'number' },
    { fieldId: 'tag', fieldType: 'string', filterable: true },
  ],
  lookupFields: ['tag'],
};

/** The exact lookups the bench rotates through (16 tag values). */
export const lookupPath = (seq: number) =>
  `/v1/records/lookup?type=${BENCH_SCHEMA.typeName}&field=tag&value=t${seq % 16}&limit=20`;

export const benchPayload = (seq: number) => ({ name: `item ${seq}`, qty: seq % 1000, tag: `t${seq % 16}` });

export const createBody = (seq: number) =>
  JSON.stringify({ typeName: BENCH_SCHEMA.typeName, payload: benchPayload(seq) });
