// @svc/projectors: the package's one entry point. Subscribers of the event log: the projection runner and the read
// models, the read-your-writes barrier and the feeds, the document worker, the webhook and trigger reactors, the Kafka
// feed and relay. The search projector and engines are @svc/search.
export * from './documents/extract';
export * from './documents/read-model';
export * from './documents/worker';
export * from './kafka/client';
export * from './kafka/feed';
export * from './kafka/messages';
export * from './kafka/relay';
export * from './folders/read-model';
export * from './history/read-model';
export * from './identity/read-model';
export * from './read-models';
export * from './records/read-model';
export * from './runtime/catch-up';
export * from './runtime/checkpoint-follower';
export * from './runtime/feed';
export * from './runtime/log-tail';
export * from './runtime/runner';
export * from './runtime/online-rebuild';
export * from './schemas/read-model';
export * from './tenancy/read-model';
export * from './triggers/read-model';
export * from './triggers/retries';
export * from './triggers/runner';
export * from './usage/read-model';
export * from './webhooks/deliveries';
export * from './webhooks/events';
export * from './webhooks/dispatcher';
export * from './webhooks/read-model';
export * from './webhooks/sender';
