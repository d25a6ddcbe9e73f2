import {
  createRecordBody,
  patchRecordBody,
  putRecordBody,
  recordResponse,
  route,
  type RouteSpec,
} from '@svc/contracts';
import { type CommandDeps, recordView } from '@svc/domain';
import { writeByIdRoutes } from '../by-id-routes';
import { changeRecord, createRecord, deleteRecord } from './commands';

export function recordCommandRoutes(deps: CommandDeps): RouteSpec[] {
  return [
    route({
      method: 'POST',
      url: '/v1/records',
      operationId: 'createRecord',
      auth: 'data',
      permission: 'records:c',
      summary: 'Create a record (idempotent by externalId)',
      body: createRecordBody,
      response: recordResponse,
      status: 201,
      statuses: [200],
      write: true,
      handler: async ({ body, meta, reply }) => {
        const out = await createRecord(deps, body, meta);
        if (out.status === 'existing') reply.status(200);
        return recordView(out.record, out.schema.definition, { full: true });
      },
    }),
    ...writeByIdRoutes({
      resource: 'records',
      response: recordResponse,
      put: { operationId: 'updateRecord', summary: 'Replace a record payload and mutable fields', body: putRecordBody },
      patch: { operationId: 'patchRecord', summary: 'Patch a record (RFC 7386 merge patch)', body: patchRecordBody },
      change: (id, kind, body, meta) => changeRecord(deps, id, kind, body, meta),
      delete: {
        operationId: 'deleteRecord',
        summary: 'Delete a record (hard delete plus tombstone)',
        remove: (id, expectedVersion, meta) => deleteRecord(deps, id, expectedVersion, meta),
      },
    }),
  ];
}
