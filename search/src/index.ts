// @svc/search: the package's one entry point. engines/: what the query side reads at request time (the text and vector
// indexes: PostgreSQL FTS, in-memory, Elasticsearch; LanceDB, in-memory; the SQL catalogue), and the embedding model
// runtime both sides use. indexer/: the search projector, which builds those indexes from the log.
export * from './engines/catalogue';
export * from './engines/embeddings';
export * from './engines/memory-text';
export * from './engines/memory-vectors';
export * from './engines/pg-fts';
export { noteRequest } from './engines/request-pressure';
export * from './engines/vector-index';
export * from './engines/vector-models';
export * from './indexer/documents';
export * from './indexer/indexer';
export * from './indexer/vector-model-rebuild';

/** The Elasticsearch adapter, loaded only when ELASTICSEARCH_URL is set (its client is large). */
export const loadElasticsearch = () => import('./engines/es');
