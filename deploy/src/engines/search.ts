import { join } from 'node:path';
import type { Embedder, SearchEngines, Sql, TextIndex, VectorIndex } from '@svc/domain';
import {
  BuiltinEmbedder,
  BuiltinModelMissing,
  embedQuery,
  type IndexerEngines,
  LanceVectorIndex,
  loadElasticsearch,
  MemoryTextIndex,
  MemoryVectorIndex,
  ModelSwitchVectorIndex,
  NoEmbedder,
  NoVectorIndex,
  OpenAiEmbedder,
  PgTextIndex,
  type PreviousModel,
  SearchCatalogue,
  VectorModelRegistry,
} from '@svc/search';
import type { Config } from '../config';
import { ROLES } from '../service/roles';
import { StartupError } from '../service/secret';

/**
 * The search engines chosen by configuration (decisions §3): PostgreSQL FTS or Elasticsearch; LanceDB; built-in or
 * OpenAI-compatible embeddings.
 */
export async function openSearchEngines(
  config: Config,
  sql: Sql,
  log: (m: string) => void = () => {},
): Promise<IndexerEngines & SearchEngines> {
  // Queries answered beside the in-process search projector, which writes every change through these objects (role
  // all).
  const beside = ROLES[config.role].exactCaches;
  let text: TextIndex;
  if (config.elasticsearchUrl) {
    const { ElasticsearchTextIndex } = await loadElasticsearch();
    text = new ElasticsearchTextIndex({
      url: config.elasticsearchUrl,
      index: `${config.elasticsearchIndexPrefix}passages`,
    });
  } else if (beside) {
    // The search projector runs in this process and writes through it: queries are answered from memory (exact, see
    // memory-text.ts). On PGlite no other process can open the database, so nothing searches it in SQL: its search
    // statistics are not kept.
    text = new MemoryTextIndex(new PgTextIndex(sql, { sqlSearch: sql.kind !== 'pglite' }), {
      maxPassages: config.textMemoryPassages,
      log,
    });
  } else text = new PgTextIndex(sql);
  // Catalogue items are cached beside the in-process projector, which writes every change through the same object.
  const catalogue = new SearchCatalogue(sql, { cacheItems: beside ? 100_000 : 0 });
  let embedder: Embedder;
  if (config.embeddingsUrl) {
    if (!config.embeddingsModel) throw new Error('EMBEDDINGS_MODEL is required with EMBEDDINGS_URL');
    embedder = new OpenAiEmbedder({
      url: config.embeddingsUrl,
      apiKey: config.embeddingsApiKey,
      model: config.embeddingsModel,
      dims: config.embeddingsDims ?? 1536,
    });
  } else if (config.builtinEmbeddingsModel === 'none') {
    // No model: no vector table either; SEMANTIC search is refused and HYBRID answers from its keyword leg
    // (NoEmbedder).
    embedder = new NoEmbedder('BUILTIN_EMBEDDINGS_MODEL=none');
    return {
      text,
      vectors: new NoVectorIndex(),
      embedder,
      catalogue,
      embedQuery: (query) => embedQuery(embedder, query),
    };
  } else {
    try {
      embedder = new BuiltinEmbedder({ model: config.builtinEmbeddingsModel });
    } catch (e) {
      // A missing model stops the start with the ways out (fetch it, run without semantic search, or an endpoint).
      if (e instanceof BuiltinModelMissing) throw new StartupError(e.message);
      throw e;
    }
  }
  const lanceUri = config.lancedbUri ?? join(config.dataDir, 'lancedb');
  const lance = new LanceVectorIndex(lanceUri, embedder.model, embedder.dims);
  // Role all: the search projector writes through this object, so vector queries are answered from memory (exact
  // re-rank, see memory-vectors.ts).
  const own: VectorIndex =
    beside && config.vectorMemoryMb > 0
      ? new MemoryVectorIndex(lance, {
          maxBytes: config.vectorMemoryMb * 2 ** 20,
          log: (m, e) => log(e ? `${m}: ${e instanceof Error ? e.message : String(e)}` : m),
        })
      : lance;
  // One vector table per model; contexts recorded with an earlier built-in model are answered by it until rebuilt for
  // this one (vector-models.ts).
  const previous: PreviousModel[] = [];
  for (const kind of ['bge'] as const) {
    let e: BuiltinEmbedder;
    try {
      e = new BuiltinEmbedder({ model: kind });
    } catch {
      continue; // not installed
    }
    if (e.model === embedder.model) continue;
    previous.push({
      model: e.model,
      dims: e.dims,
      index: new LanceVectorIndex(lanceUri, e.model, e.dims),
      embedQuery: (q) => embedQuery(e, q),
      close: () => e.close(),
    });
  }
  const vectors = new ModelSwitchVectorIndex(
    own,
    embedder.model,
    embedder.dims,
    new VectorModelRegistry(sql),
    previous,
  );
  return { text, vectors, embedder, catalogue, embedQuery: (query) => embedQuery(embedder, query) };
}
