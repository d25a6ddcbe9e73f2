// @svc/deploy: the package's one entry point. How the pieces are put together: configuration, engine connections, the
// HTTP edge and the service (`buildService`). The launchers (start.ts, rebuild.ts, export.ts) are entry points, not
// exports.
export * from './activity/recorder';
export * from './config';
export * from './engines/blobs';
export * from './engines/event-store-postgres';
export * from './engines/load-kurrentdb';
export * from './engines/s3-blobs';
export * from './engines/sql';
export * from './engines/sql-thread';
export * from './features';
export * from './service';
export * from './http/catalogue';
export { ROUTER_CONFIG_PATH, roleOf, routerConfig, routingTable } from './http/router-config';
