// @svc/command-api: the package's one entry point. The write side: route handlers (which call the command handler in
// @svc/domain), sealing, limits, metering, and the event-store adapters.
import {} from '@svc/domain';
export * from './documents/commands';
export * from './documents/routes';
export * from './documents/storage';
export * from './documents/upload-poller';
export * from './event-store/postgres';
export * from './folders/load';
export * from './folders/routes';
export * from './identity/routes';
export * from './limits/burst-limit';
export * from './limits/redis-window-counter';
export * from './limits/window-counter';
export * from './records/batch';
export * from './records/commands';
export * from './records/routes';
export * from './records/sealing';
export * from './schemas/routes';
export * from './scripts/executor';
export * from './scripts/idempotency';
export * from './scripts/read-routes';
export * from './scripts/routes';
export * from './scripts/sandbox-pool';
export * from './scripts/versions';
export * from './tenancy/jwt-issuers';
export * from './tenancy/routes';
export * from './triggers/routes';
export * from './usage/gates';
export * from './usage/meter';
export * from './usage/read-metering';
export * from './webhooks/domains';
export * from './webhooks/registrations';
export * from './webhooks/retry';

/** The KurrentDB adapter, loaded only when EVENTSTORE_URL is set (its gRPC client is large). */
export const loadKurrentDb = () => import('./event-store/kurrentdb');
