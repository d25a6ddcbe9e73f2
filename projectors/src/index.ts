// @svc/projectors: the package's one entry point. Subscribers of the event log: the projection runner and the read
// models, the read-your-writes barrier, the search projector and the search engines' adapters, the document worker, the
// Kafka feed and relay.
export * from './documents/extract';
export * from './documents/worker';
export * from './kafka/client';
export * from './kafka/feed';
export * from './kafka/messages';
export * from './kafka/relay';
export * from './read-models/documents';
export * from './read-models/folders';
export * from './read-models/history';
export * from './read-models/identity';
export * from './read-models/records';
export * from './read-models/schemas';
export * from './read-models/tenancy';
export * from './read-models/usage';
export * from './runtime/catch-up';
export * from './runtime/checkpoint-follower';
export * from './runtime/checkpoints';
export * from './runtime/log-tail';
export * from './runtime/runner';
export * from './runtime/online-rebuild';
export * from './search/catalogue';
export * from './search/embeddings';
export * from './search/indexer';
export * from './search/memory-text';
export * from './search/memory-vectors';
export * from './search/pg-fts';
export * from './search/vector-index';
export * from './search/vector-models';
export * from './triggers/read-model';
export * from './triggers/retries';
export * from './triggers/runner';
export * from './webhooks/deliveries';
export * from './webhooks/events';
export * from './webhooks/dispatcher';
export * from './webhooks/read-model';
export * from './webhooks/sender';

/** The Elasticsearch adapter, loaded only when ELASTICSEARCH_URL is set (its client is large). */
export const loadElasticsearch = () => import('./search/es');
