import { z } from 'zod';
import { identifier } from '../common';

/**
 * Content search (spec "Content search"; decisions §1: POST /v1/search).
 * `filters` is checked by the domain's filter parser (operators, operands, keys).
 */
export const SEARCH_MODES = ['TEXT', 'SEMANTIC', 'HYBRID'] as const;
export const TEXT_MODES = ['OR', 'AND', 'PHRASE', 'COMPLEX'] as const;
export const CONTENT_TYPES = ['documents', 'records'] as const;
export const SEARCH_LIMIT = { min: 1, max: 100, default: 20 } as const;

const isoDate = z
  .string()
  .refine((s) => /^\d{4}-\d{2}-\d{2}/.test(s) && !Number.isNaN(Date.parse(s)), 'must be an ISO-8601 date or date-time');
const ownerId = z.string().min(1).max(128);

export const searchBody = z
  .object({
    query: z.string().trim().min(1).max(4000),
    mode: z.enum(SEARCH_MODES).default('HYBRID'),
    limit: z.number().int().min(SEARCH_LIMIT.min).max(SEARCH_LIMIT.max).default(SEARCH_LIMIT.default),
    offset: z.number().int().min(0).max(10_000).default(0),
    contentTypes: z.array(z.enum(CONTENT_TYPES)).max(2).optional(),
    typeName: identifier.optional(),
    folderId: z.string().uuid().optional(),
    rootFolderId: z.string().uuid().optional(),
    userId: ownerId.optional(),
    orgId: ownerId.optional(),
    clientId: ownerId.optional(),
    filters: z.record(z.string(), z.unknown()).optional(),
    createdAfter: isoDate.optional(),
    createdBefore: isoDate.optional(),
    uniqueDocuments: z.boolean().default(false),
    minSimilarity: z.number().min(0).max(1).optional(),
    minTextRelevance: z.number().max(1).optional(),
    textMode: z.enum(TEXT_MODES).default('OR'),
    slop: z.number().int().min(0).max(100).default(0),
    requireComplete: z.boolean().default(false),
  })
  .strict();
export type SearchBody = z.infer<typeof searchBody>;

export const searchResult = z.object({
  documentId: z.string(),
  sourceType: z.enum(['PartnerDocument', 'GenericRecord']),
  score: z.number(),
  textScore: z.number(),
  semanticScore: z.number(),
  chunkText: z.string(),
  contextText: z.string(),
  snippet: z.string().nullable(),
  metadata: z.record(z.string(), z.unknown()),
  createdAt: z.string(),
  typeName: z.string().nullable(),
});
export type SearchResult = z.infer<typeof searchResult>;

export const searchResponse = z.object({
  results: z.array(searchResult),
  totalResults: z.number().int(),
  searchTimeMs: z.number(),
  degraded: z.boolean(),
  degradedLegs: z.array(z.enum(['text', 'vector'])),
});
export type SearchResponse = z.infer<typeof searchResponse>;
