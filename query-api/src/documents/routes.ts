import { z } from 'zod';
import { blindIndex, documentResponse, documentTextResponse, downloadUrlResponse, idParam, invalid, limitParam, listDocumentsQuery, listEnvelope, notFound, type Paginator, type Principal, route, type RouteSpec } from '@svc/contracts';
import { baseUrlOf, type BlobStore, canReach, documentView, ownerKeyOf, type PresignedBlobUrls, type Sql, type StorageGrants, TEXT_READY_STATUSES } from '@svc/domain';
import { schemaForType, type SchemaReads } from '../schemas/reads';
import { lookupParams, planLookup, type LookupParams, type LookupPlan } from '../records/lookups';
import type { DocumentReads, DocumentRow } from './reads';

/** The records lookup plan over the documents' own index (rm_document_lookups). */
async function runDocumentLookup(sql: Sql, p: Principal, typeName: string, plan: LookupPlan, after: string[] | undefined, limit: number) {
  const order = plan.order.map((o) => (o.col === 'record_id' ? { ...o, col: 'document_id' } : o));
  const args: unknown[] = [p.tenantId, p.contextId, typeName, plan.field, ...plan.args];
  const arg = (v: unknown) => {
    args.push(v);
    return `$${args.length}`;
  };
  const where = ['l.tenant_id = $1', 'l.context_id = $2', 'l.type_name = $3', 'l.field = $4', ...plan.where];
  const ds = p.dataScope;
  const userId = ds?.userId ?? p.userId;
  if (userId) where.push(`d.user_id = ${arg(userId)}`);
  if (ds?.scopes?.length) where.push(`d.scopes ?| ${arg(ds.scopes)}::text[]`);
  if (after) {
    const ors: string[] = [];
    for (let i = 0; i < order.length; i++) {
      const eqs = order.slice(0, i).map((o, j) => `l.${o.col} = ${arg(after[j])}`);
      eqs.push(`l.${order[i].col} ${order[i].dir === 'ASC' ? '>' : '<'} ${arg(after[i])}`);
      ors.push(`(${eqs.join(' AND ')})`);
    }
    where.push(`(${ors.join(' OR ')})`);
  }
  const { rows } = await sql.query<Record<string, string>>(
    `SELECT ${order.map((o) => `l.${o.col}`).join(', ')} FROM rm_document_lookups l JOIN rm_documents d ON d.document_id = l.document_id
      WHERE ${where.join(' AND ')}
      ORDER BY ${order.map((o) => `l.${o.col} ${o.dir}`).join(', ')} LIMIT ${arg(limit)}`,
    args,
  );
  return rows.map((r) => ({ documentId: r.document_id, cursor: order.map((o) => r[o.col]) }));
}

export function documentQueryRoutes(o: { sql: Sql; documents: DocumentReads; schemas: SchemaReads; pages: Paginator; blindKey: Buffer; blobs: BlobStore; grants: StorageGrants; presigned?: PresignedBlobUrls }): RouteSpec[] {
  const { documents, schemas, pages } = o;
  const view = async (d: DocumentRow, full: boolean) => documentView(d, d.schemaId ? await schemas.definition(d.schemaId) : undefined, { full });
  const reachable = async (p: Principal, id: string) => {
    const d = await documents.byId(id);
    if (!d || !canReach(p, d)) throw notFound();
    return d;
  };

  async function lookup(q: LookupParams & { limit: number }, p: Principal, via: 'GET' | 'POST') {
    const { startFrom, limit, ...bound } = q;
    const scope = `document-lookup:${p.tenantId}:${p.contextId}:${via}`;
    const params = { ...bound, limit };
    const def = await schemaForType(o.sql, p.tenantId!, p.contextId!, q.type, ownerKeyOf({ userId: p.dataScope?.userId ?? p.userId ?? undefined, scopes: p.dataScope?.scopes }));
    if (!def) throw invalid(`No schema with typeName '${q.type}' in this context`);
    const plan = planLookup(def, q, via, (field, value) => blindIndex(o.blindKey, [p.tenantId!, p.contextId!, q.type, field], value));
    const after = pages.start<string[]>(scope, params, startFrom);
    const hits = await runDocumentLookup(o.sql, p, q.type, plan, after, limit + 1);
    const page = pages.page(scope, params, hits, limit, (h) => h.cursor, (h) => h.documentId);
    const byId = new Map((await documents.byIds(page.data)).map((d) => [d.id, d]));
    const full = q.includePayload === true || q.includePayload === 'true';
    const data = await Promise.all(page.data.map((id) => byId.get(id)).filter((d): d is DocumentRow => !!d).map((d) => view(d, full)));
    return { data, nextCursor: page.nextCursor };
  }

  return [
    route({
      method: 'GET',
      url: '/v1/documents/lookup',
      operationId: 'lookupDocuments',
      auth: 'data',
      permission: 'documents:r',
      summary: "Look documents up by a lookup field of their schema (type = the schema's typeName): exact, range or prefix",
      query: lookupParams.extend({ limit: limitParam, values: z.union([z.string(), z.array(z.string()).min(1).max(3)]).optional() }),
      response: listEnvelope(documentResponse),
      handler: ({ query, principal }) => lookup(query as LookupParams & { limit: number }, principal, 'GET'),
    }),
    route({
      method: 'POST',
      url: '/v1/documents/lookup',
      operationId: 'lookupDocumentsByBody',
      auth: 'data',
      permission: 'documents:r',
      summary: 'Document lookup with the parameters in the body (required for sensitive fields)',
      body: lookupParams.extend({ limit: limitParam }),
      response: listEnvelope(documentResponse),
      handler: ({ body, principal }) => lookup(body, principal, 'POST'),
    }),
    route({
      method: 'GET',
      url: '/v1/documents/:id',
      operationId: 'getDocument',
      auth: 'data',
      permission: 'documents:r',
      summary: 'Get a document (status, payload, sizes)',
      params: idParam,
      response: documentResponse,
      handler: async ({ params, principal: p }) => view(await reachable(p, params.id), true),
    }),
    route({
      method: 'GET',
      url: '/v1/documents/:id/text',
      operationId: 'getDocumentText',
      auth: 'data',
      permission: 'documents:r',
      summary: 'The retained text of a document as JSON {id, text, textBytes}; 404 when not retained or extraction is incomplete',
      params: idParam,
      response: documentTextResponse,
      handler: async ({ params, principal: p }) => {
        const d = await reachable(p, params.id);
        if (!d.textRetained || !d.textRef || !TEXT_READY_STATUSES.includes(d.status)) throw notFound();
        const text = await o.blobs.get(d.textRef);
        if (!text) throw notFound();
        return { id: d.id, text: text.toString('utf8'), textBytes: text.length };
      },
    }),
    route({
      method: 'GET',
      url: '/v1/documents/:id/download-url',
      operationId: 'getDocumentDownloadUrl',
      auth: 'data',
      permission: 'documents:r',
      summary: 'A presigned download URL of the uploaded file (404 for text-only documents and before the upload)',
      params: idParam,
      response: downloadUrlResponse,
      handler: async ({ params, principal: p, req, meta }) => {
        const d = await reachable(p, params.id);
        if (!d.fileRef) throw notFound();
        if (o.presigned) return o.presigned.download({ key: d.fileRef, contentType: d.fileType, fileName: d.fileName, now: meta.now });
        return o.grants.download(baseUrlOf(req.headers, req.protocol), d.id, d.fileRef, meta.now.getTime());
      },
    }),
    route({
      method: 'GET',
      url: '/v1/documents',
      operationId: 'listDocuments',
      auth: 'data',
      permission: 'documents:r',
      summary: 'List documents, oldest first (filters: userId, scope, folderId)',
      query: listDocumentsQuery.extend({ limit: limitParam }),
      response: listEnvelope(documentResponse),
      handler: async ({ query, principal: p }) => {
        const { startFrom, limit, ...filters } = query;
        const scope = `documents:${p.tenantId}:${p.contextId}`;
        const params = { ...filters, limit };
        const after = pages.start<[string, string]>(scope, params, startFrom);
        const ds = p.dataScope;
        const rows = await documents.list(p.tenantId!, p.contextId!, { ...filters, scopeUserId: ds?.userId ?? p.userId ?? undefined, scopeAnyOf: ds?.scopes }, after, limit + 1);
        const page = pages.page(scope, params, rows, limit, (r) => [r.createdAt, r.id] as [string, string], (r) => r);
        return { data: await Promise.all(page.data.map((r) => view(r, false))), nextCursor: page.nextCursor };
      },
    }),
  ];
}
