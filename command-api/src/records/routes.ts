import { createRecordBody, idParam, patchRecordBody, putRecordBody, recordResponse, route, type RouteSpec } from '@svc/contracts';
import { recordView } from '@svc/domain';
import { z } from 'zod';
import type { CommandDeps } from '../handle-command';
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
    route({
      method: 'PUT',
      url: '/v1/records/:id',
      operationId: 'updateRecord',
      auth: 'data',
      permission: 'records:u',
      summary: 'Replace a record payload and mutable fields',
      params: idParam,
      body: putRecordBody,
      response: recordResponse,
      write: true,
      handler: ({ params, body, meta }) => changeRecord(deps, params.id, 'put', body as Record<string, unknown>, meta),
    }),
    route({
      method: 'PATCH',
      url: '/v1/records/:id',
      operationId: 'patchRecord',
      auth: 'data',
      permission: 'records:u',
      summary: 'Patch a record (RFC 7386 merge patch)',
      params: idParam,
      body: patchRecordBody,
      response: recordResponse,
      write: true,
      handler: ({ params, body, meta }) => changeRecord(deps, params.id, 'patch', body, meta),
    }),
    route({
      method: 'DELETE',
      url: '/v1/records/:id',
      operationId: 'deleteRecord',
      auth: 'data',
      permission: 'records:d',
      summary: 'Delete a record (hard delete plus tombstone)',
      params: idParam,
      query: z.object({ expectedVersion: z.coerce.number().int().optional() }),
      status: 204,
      write: true,
      handler: async ({ params, query, meta }) => {
        await deleteRecord(deps, params.id, query.expectedVersion, meta);
        return null;
      },
    }),
  ];
}
