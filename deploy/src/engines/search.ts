import { join } from 'node:path';
import type { Sql } from '@svc/domain/ports/sql';
import { SearchCatalogue } from '@svc/projectors/search/catalogue';
import { BuiltinEmbedder, OpenAiEmbedder, type Embedder } from '@svc/projectors/search/embeddings';
import type { SearchEngines } from '@svc/projectors/search/indexer';
import { PgTextIndex } from '@svc/projectors/search/pg-fts';
import { MemoryTextIndex } from '@svc/projectors/search/memory-text';
import type { TextIndex } from '@svc/projectors/search/text-index';
import { LanceVectorIndex, type VectorIndex } from '@svc/projectors/search/vector-index';
import { MemoryVectorIndex } from '@svc/projectors/search/memory-vectors';
import type { Config } from '../config';

/** The search engines chosen by configuration (decisions §3): PostgreSQL FTS or Elasticsearch; LanceDB; built-in or OpenAI-compatible embeddings. */
export async function openSearchEngines(config: Config, sql: Sql): Promise<SearchEngines> {
  let text: TextIndex;
  if (config.elasticsearchUrl) {
    const { ElasticsearchTextIndex } = await import('@svc/projectors/search/es');
    text = new ElasticsearchTextIndex({ url: config.elasticsearchUrl, index: `${config.elasticsearchIndexPrefix}passages` });
  } else if (config.role === 'all') {
    // The search projector runs in this process and writes through it: queries are answered from memory (exact, see memory-text.ts).
    text = new MemoryTextIndex(new PgTextIndex(sql), { maxPassages: config.textMemoryPassages });
  } else text = new PgTextIndex(sql);
  let embedder: Embedder;
  if (config.embeddingsUrl) {
    if (!config.embeddingsModel) throw new Error('EMBEDDINGS_MODEL is required with EMBEDDINGS_URL');
    embedder = new OpenAiEmbedder({ url: config.embeddingsUrl, apiKey: config.embeddingsApiKey, model: config.embeddingsModel, dims: config.embeddingsDims ?? 1536 });
  } else embedder = new BuiltinEmbedder();
  const lance = new LanceVectorIndex(config.lancedbUri ?? join(config.dataDir, 'lancedb'), embedder.model, embedder.dims);
  // Role all: the search projector writes through this object, so vector queries are answered from memory (exact re-rank, see memory-vectors.ts).
  const vectors: VectorIndex = config.role === 'all' && config.vectorMemoryMb > 0 ? new MemoryVectorIndex(lance, { maxBytes: config.vectorMemoryMb * 2 ** 20 }) : lance;
  // Catalogue items are cached beside the in-process projector, which writes every change through the same object.
  return { text, vectors, embedder, catalogue: new SearchCatalogue(sql, { cacheItems: config.role === 'all' ? 100_000 : 0 }) };
}
