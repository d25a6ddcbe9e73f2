import { trace } from '@opentelemetry/api';
import { setImmediate as nextTurn } from 'node:timers/promises';
import {
  type Principal,
  route,
  type RouteSpec,
  type SearchBody,
  searchBody,
  searchResponse,
  type SearchResponse,
  type SearchResult,
  ServiceError,
} from '@svc/contracts';
import {
  aboveTextRelevance,
  convexFusion,
  type ItemFilter,
  type LegHit,
  type SearchEngines,
  type Sql,
  type TextHit,
  type TextSearch,
  type VectorHit,
} from '@svc/domain';
import { planFilter } from './plan';

/**
 * POST /v1/search (search:r). Filters apply inside each leg before ranking and
 * the limit; HYBRID fuses the legs' normalised scores (convex fusion, docs/search.md);
 * with uniqueDocuments it fuses documents (each leg's best passage per document).
 * When one leg fails the other answers with `degraded: true` (503 with
 * `requireComplete`); when every leg of the mode fails the answer is 503.
 */
const CANDIDATES = { min: 100, max: 1000 } as const;
/** Above this many admitted items the vector leg searches the context and filters afterwards. */
const PREFILTER_IDS_MAX = 5000;

/**
 * A ranked passage; hits of either leg may arrive without their text, which is read for the page shown only
 * (TextIndex.hydrate, VectorIndex.hydrate).
 */
type Passage = TextHit | (VectorHit & { snippet: null });
const keyOf = (itemId: string, chunkNo: number) => `${itemId}#${chunkNo}`;

export async function runSearch(
  sql: Sql,
  engines: SearchEngines,
  p: Principal,
  b: SearchBody,
): Promise<SearchResponse> {
  const started = performance.now();
  // Concurrent searches go stage by stage: every request that has arrived runs its legs, then every one
  // reads its page and answers (a turn of the event loop before each stage). Back-to-back leg runs keep
  // the indexes' arrays in the CPU caches, and answers leave in the order requests came: at 16 clients
  // over 100,000 passages, ~10% less CPU per request and p99 about a third lower (docs/search.md, Latency).
  await nextTurn();
  const filter = await planFilter(sql, p, b);
  const want = Math.min(CANDIDATES.max, Math.max(CANDIDATES.min, (b.offset + b.limit) * 3));
  // The keyword weight tuned for the embedding model in use (else the default).
  const fusion = { textWeight: engines.embedder.fusionTextWeight };
  const useText = b.mode !== 'SEMANTIC';
  // No embedding model (BUILTIN_EMBEDDINGS_MODEL=none): SEMANTIC cannot be served, now or after a retry; HYBRID answers
  // from its keyword leg, marked degraded (and 503 with requireComplete), as when the model does not answer.
  const noModel = engines.embedder.unavailable;
  if (noModel !== undefined && b.mode === 'SEMANTIC')
    throw new ServiceError(
      'UNAVAILABLE',
      `Semantic search is not available on this service: it runs without an embedding model (${noModel}); ` +
        `use mode TEXT`,
    );
  const wantVector = b.mode !== 'TEXT';
  const useVector = wantVector && noModel === undefined;
  const passages = new Map<string, Passage>();

  // totalResults counts the ranked candidates, so the keyword leg need not count every match (trackTotal). A TEXT
  // ranking of plain passages needs only the page's hits and the candidates' count (up to `want`): the keyword leg
  // then ranks the page alone and counts matches that far (countUpTo), which lets it skip more of the postings. A page
  // beyond the depth (offset up to 10,000) stays empty, as before: the leg never ranks past `want`.
  const pageOnly = b.mode === 'TEXT' && !b.minTextRelevance && !b.uniqueDocuments;
  const textSearch: TextSearch = {
    filter,
    query: b.query,
    textMode: b.textMode,
    slop: b.textMode === 'PHRASE' ? b.slop : 0,
    limit: pageOnly ? Math.min(b.offset + b.limit, want) : want,
    trackTotal: false,
    ...(pageOnly ? { countUpTo: want } : {}),
  };
  let candidates = 0;
  const textLeg = async (): Promise<LegHit[]> => {
    const r = await engines.text.search(textSearch);
    candidates = r.total;
    for (const h of r.hits) passages.set(keyOf(h.itemId, h.chunkNo), h);
    return aboveTextRelevance(
      r.hits.map((h) => ({ key: keyOf(h.itemId, h.chunkNo), score: h.score })),
      b.minTextRelevance,
    );
  };
  const vectorLeg = async (): Promise<LegHit[]> => {
    const vector = await engines.embedQuery(b.query); // LRU-cached per exact query text
    const hits = await vectorSearch(engines, filter, vector, want, b.query);
    const out: LegHit[] = [];
    for (const h of hits) {
      if (b.minSimilarity !== undefined && h.similarity < b.minSimilarity) continue;
      const k = keyOf(h.itemId, h.chunkNo);
      if (!passages.has(k)) passages.set(k, { ...h, snippet: null });
      out.push({ key: k, score: h.similarity });
    }
    return out;
  };

  const [t, v] = await Promise.allSettled([
    useText ? textLeg() : Promise.resolve([]),
    useVector ? vectorLeg() : Promise.resolve([]),
  ]);
  await nextTurn();
  // The ranked page; a text leg whose page text cannot be read (TextIndex.hydrate) counts as a failed leg too.
  const settle = (textFailed: boolean, vectorFailed: boolean) => {
    const degradedLegs: Array<'text' | 'vector'> = [];
    const textDown = useText && textFailed;
    const vectorDown = wantVector && (vectorFailed || !useVector);
    if (textDown) degradedLegs.push('text');
    if (vectorDown) degradedLegs.push('vector');
    const allFailed = (!useText || textDown) && (!wantVector || vectorDown);
    // Engines that do not answer now (a restart, an outage): the client may retry after the pause, as after the
    // router's own 503.
    const retry = { headers: { 'retry-after': '1' } };
    if (allFailed) throw new ServiceError('UNAVAILABLE', 'Search is temporarily unavailable', retry);
    if (degradedLegs.length && b.requireComplete)
      throw new ServiceError(
        'UNAVAILABLE',
        `Search is degraded (${degradedLegs.join(', ')} unavailable) and requireComplete is set`,
        retry,
      );
    const itemOf = (h: LegHit) => passages.get(h.key)!.itemId;
    // uniqueDocuments: each leg keeps its best passage per document.
    const bestPerItem = (hits: LegHit[]) => {
      const seen = new Set<string>();
      return hits.filter((h) => (seen.has(itemOf(h)) ? false : (seen.add(itemOf(h)), true)));
    };
    const legHits = (r: PromiseSettledResult<LegHit[]>, failed: boolean) =>
      r.status === 'fulfilled' && !failed ? (b.uniqueDocuments ? bestPerItem(r.value) : r.value) : [];
    const textHits = legHits(t, textFailed);
    const vecHits = legHits(v, vectorFailed);

    let ranked: Array<{ key: string; score: number; textScore: number; semanticScore: number }>;
    if (b.mode === 'TEXT')
      ranked = textHits.map((h) => ({ key: h.key, score: h.score, textScore: 0, semanticScore: 0 }));
    else if (b.mode === 'SEMANTIC')
      ranked = vecHits.map((h) => ({ key: h.key, score: h.score, textScore: 0, semanticScore: h.score }));
    else if (!b.uniqueDocuments) ranked = convexFusion(textHits, vecHits, fusion);
    else {
      // Documents are fused, so a document both legs found gets both scores even when their best passages differ;
      // it is shown with the keyword leg's passage (which has a snippet) when there is one.
      const shown = new Map<string, string>();
      for (const h of [...textHits, ...vecHits]) if (!shown.has(itemOf(h))) shown.set(itemOf(h), h.key);
      const byItem = (hits: LegHit[]) => hits.map((h) => ({ key: itemOf(h), score: h.score }));
      ranked = convexFusion(byItem(textHits), byItem(vecHits), fusion).map((f) => ({ ...f, key: shown.get(f.key)! }));
    }
    // A HYBRID miss is empty (spec, "Content search"): when no keyword matches anything, what the vector leg found
    // must be near enough to count (its nearest passages always exist).
    const floor = engines.embedder.hybridSimilarityFloor;
    if (b.mode === 'HYBRID' && floor !== undefined && !textFailed && !textHits.length)
      ranked = ranked.filter((r) => r.semanticScore >= floor);
    return { degradedLegs, ranked, page: ranked.slice(b.offset, b.offset + b.limit) };
  };
  // The page's texts: each leg reads those of its passages on the page (a leg that cannot counts as failed, and the
  // page is settled again). HYBRID's fusion as a span of its own (docs/operations.md "Traces"; the API's no-op tracer
  // when traces are off).
  const fused = (textFailed: boolean, vectorFailed: boolean) =>
    b.mode !== 'HYBRID'
      ? settle(textFailed, vectorFailed)
      : trace.getTracer('svc').startActiveSpan('search fuse', (span) => {
          try {
            const r = settle(textFailed, vectorFailed);
            span.setAttributes({ 'svc.fused': r.ranked.length, 'svc.degraded_legs': r.degradedLegs.join(',') });
            return r;
          } finally {
            span.end();
          }
        });
  let failed = { text: t.status === 'rejected', vector: v.status === 'rejected' };
  let { degradedLegs, ranked, page } = fused(failed.text, failed.vector);
  let items: Awaited<ReturnType<typeof engines.catalogue.items>>;
  for (;;) {
    const shown = page.map((r) => passages.get(r.key)!);
    const bare = shown.filter((ps): ps is TextHit => ps.chunkText === undefined && !('similarity' in ps));
    const bareVec = shown.filter(
      (ps): ps is VectorHit & { snippet: null } => ps.chunkText === undefined && 'similarity' in ps,
    );
    const [it, textOk, vectorOk] = await Promise.all([
      engines.catalogue.items(shown.map((ps) => ps.itemId)),
      bare.length && engines.text.hydrate
        ? engines.text.hydrate(bare, textSearch).then(
            () => true,
            () => false,
          )
        : true,
      bareVec.length
        ? engines.vectors.hydrate(bareVec, filter).then(
            () => true,
            () => false,
          )
        : true,
    ]);
    items = it;
    if (textOk && vectorOk) break;
    failed = { text: failed.text || !textOk, vector: failed.vector || !vectorOk };
    ({ degradedLegs, ranked, page } = fused(failed.text, failed.vector));
  }
  const results: SearchResult[] = [];
  for (const r of page) {
    const ps = passages.get(r.key)!;
    const it = items.get(ps.itemId);
    if (!it) continue; // deleted between the leg and now
    results.push({
      documentId: ps.itemId,
      sourceType: it.sourceType === 'document' ? 'PartnerDocument' : 'GenericRecord',
      score: r.score,
      textScore: r.textScore,
      semanticScore: r.semanticScore,
      chunkText: ps.chunkText ?? '',
      contextText: ps.contextText ?? '',
      snippet: ps.snippet ?? null,
      metadata: { ...it.metadata, chunkNo: ps.chunkNo },
      createdAt: it.createdAt,
      typeName: it.typeName,
    });
  }
  return {
    results,
    totalResults: pageOnly ? candidates : ranked.length,
    searchTimeMs: Math.round((performance.now() - started) * 10) / 10,
    degraded: degradedLegs.length > 0,
    degradedLegs,
  };
}

/**
 * The vector leg with every filter applied first: as an id prefilter, or (many admitted items) a wider search filtered
 * afterwards.
 */
async function vectorSearch(engines: SearchEngines, f: ItemFilter, vector: number[], limit: number, query?: string) {
  const narrowed = !!(
    f.sourceTypes ||
    f.typeName ||
    f.folderIds ||
    f.userIds ||
    f.scopesAll ||
    f.scopesAny ||
    f.createdAfter ||
    f.createdBefore ||
    f.clauses.length
  );
  // Hits without texts: the page's are read afterwards (VectorIndex.hydrate).
  if (!narrowed)
    return engines.vectors.search({ tenantId: f.tenantId, contextId: f.contextId, vector, query, limit, text: false });
  const ids = await engines.catalogue.admitted(f, PREFILTER_IDS_MAX);
  if (ids)
    return engines.vectors.search({
      tenantId: f.tenantId,
      contextId: f.contextId,
      vector,
      query,
      limit,
      itemIds: ids,
      text: false,
    });
  const wide = await engines.vectors.search({
    tenantId: f.tenantId,
    contextId: f.contextId,
    vector,
    query,
    limit: limit * 10,
    text: false,
  });
  const ok = await engines.catalogue.admit(
    f,
    wide.map((h) => h.itemId),
  );
  return wide.filter((h) => ok.has(h.itemId)).slice(0, limit);
}

export function searchRoutes(sql: Sql, engines: SearchEngines): RouteSpec[] {
  return [
    route({
      method: 'POST',
      url: '/v1/search',
      operationId: 'searchContent',
      errors: [503],
      auth: 'data',
      permission: 'search:r',
      rateLimited: true,
      summary:
        'Content search over records and documents: TEXT (keyword, BM25), SEMANTIC (embeddings) or HYBRID ' +
        '(convex fusion of normalised scores)',
      body: searchBody,
      response: searchResponse,
      handler: ({ body, principal }) => runSearch(sql, engines, principal, body),
    }),
  ];
}
