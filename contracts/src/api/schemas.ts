import { z } from 'zod';
import { identifier, scopes } from '../common';

export const FIELD_TYPES = ['string', 'number', 'boolean', 'date', 'enum', 'array', 'object', 'reference'] as const;
export const INDEX_MODES = ['HYBRID', 'SEMANTIC', 'TEXT', 'NONE'] as const;
export const SURFACES = ['record', 'document', 'user', 'entity'] as const;
export const VALIDATION_KEYS = [
  'required',
  'minLength',
  'maxLength',
  'min',
  'max',
  'pattern',
  'email',
  'url',
  'phone',
  'step',
  'multipleOf',
  'minItems',
  'maxItems',
] as const;

export const validationSchema = z
  .object({
    required: z.boolean(),
    minLength: z.number().int().min(0),
    maxLength: z.number().int().min(0),
    min: z.number(),
    max: z.number(),
    pattern: z.string().max(1000),
    email: z.boolean(),
    url: z.boolean(),
    phone: z.boolean(),
    step: z.number().positive(),
    multipleOf: z.number().positive(),
    minItems: z.number().int().min(0),
    maxItems: z.number().int().min(0),
  })
  .partial()
  .strict();

export const fieldDefSchema = z
  .object({
    fieldId: identifier,
    fieldType: z.enum(FIELD_TYPES),
    required: z.boolean().optional(),
    searchable: z.boolean().optional(),
    filterable: z.boolean().optional(),
    description: z.string().max(2000).optional(),
    validation: validationSchema.optional(),
    enumValues: z
      .array(z.union([z.string(), z.number(), z.boolean()]))
      .min(1)
      .optional(),
    sensitive: z.boolean().optional(),
    inline: z.boolean().optional(),
    targetTypeName: identifier.optional(),
    targetField: identifier.optional(),
    cardinality: z.enum(['one', 'many']).optional(),
    targetSurface: z.string().min(1).max(64).optional(),
  })
  .strict();

export const lookupDefSchema = z.union([
  identifier,
  z.object({ fieldName: identifier, unique: z.boolean().optional(), rangeEnabled: z.boolean().optional() }).strict(),
  z.object({ fieldNames: z.array(identifier).min(2).max(3) }).strict(),
]);

export const renderHintSchema = z
  .object({
    label: z.string().max(200).optional(),
    widget: z.enum(['text', 'textarea', 'select', 'date', 'checkbox']).optional(),
    order: z.number().int().optional(),
    section: z.string().max(200).optional(),
    helpText: z.string().max(2000).optional(),
    displayField: z.boolean().optional(),
  })
  .strict();

const schemaBodyShape = {
  typeName: identifier,
  displayName: z.string().min(1).max(200),
  description: z.string().max(2000).optional(),
  fields: z.array(fieldDefSchema).max(500).optional(),
  lookupFields: z.array(lookupDefSchema).optional(),
  sortBy: z.string().min(1).max(64).optional(),
  renderHints: z.record(z.string(), renderHintSchema).optional(),
  capabilities: z.record(z.string(), z.boolean()).optional(),
  indexMode: z.enum(INDEX_MODES).optional(),
  storageProfile: z.enum(['STANDARD', 'LOW_LATENCY', 'LARGE_PAYLOAD']).optional(),
  allowedSurfaces: z.array(z.enum(SURFACES)).min(1),
  active: z.boolean().optional(),
  userId: z.string().min(1).max(128).optional(),
  scopes: scopes.optional(),
  basedOn: z.string().min(1).max(128).optional(),
};

export const createSchemaBody = z.object(schemaBodyShape).strict();
export type SchemaDefinition = z.infer<typeof createSchemaBody>;

/** PUT: full replace; `typeName` and `basedOn` immutable (may be repeated unchanged). */
export const updateSchemaBody = z
  .object({
    ...schemaBodyShape,
    typeName: identifier.optional(),
    displayName: schemaBodyShape.displayName.optional(),
    allowedSurfaces: schemaBodyShape.allowedSurfaces.optional(),
    expectedVersion: z.number().int().optional(),
  })
  .strict();
export type SchemaUpdate = z.infer<typeof updateSchemaBody>;

export const schemaResponse = z.object({
  id: z.string(),
  ...schemaBodyShape,
  schemaVersion: z.number().int(),
  active: z.boolean(),
  capabilities: z.record(z.string(), z.boolean()),
  createdAt: z.string(),
  updatedAt: z.string(),
});
