// @svc/client: a typed client of the service (docs/client.md, client/README.md). The types are generated from the
// service's /openapi.json (src/generated/openapi.ts, `npm run generate -w client`); every request goes through
// openapi-fetch over them. This entry runs in browsers and Node alike: it imports no Node built-in (the webhook
// verification, which needs node:crypto, is the `@svc/client/node` entry, src/node.ts). It imports no other workspace.
export type * from './api-types.js';
export { ApiError, result, unwrap, type Fetched, type Result } from './errors.js';
export { collectAnswer, events } from './streams.js';
export type {
  ChangeEntityKind,
  ChangeEvent,
  ChangeEventType,
  ChangesOptions,
  DocumentChangeType,
  FolderChangeType,
  RecordChangeType,
} from './changes.js';
export { createClient, type ClientOptions, type ServiceClient, type TokenSource } from './client.js';
