import { randomUUID } from 'node:crypto';
import { deriveKey, EVENT_SCHEMA_VERSION, type EventMetadata, type Principal } from '@svc/contracts';
import { PayloadSealer } from '@svc/command-api';
import { openSql, PostgresEventStore } from '@svc/deploy';
import { type CommandDeps, commit, streams } from '@svc/domain';
import { inProcessBarrier, ProjectionRunner, readModelProjections } from '@svc/projectors';
import { planLookup, RecordReads, runLookup } from '@svc/query-api';
import { closedLoop, type LoadResult } from './load';
import { BENCH_SCHEMA, benchPayload } from './workload';

/**
 * The engine measured without the service on top: the same adapters the
 * service uses (openSql -> PGlite on a data directory, PostgresEventStore,
 * ProjectionRunner), driven in this process.
 */
export interface Timing {
  concurrency: number;
  warmupMs: number;
  durationMs: number;
}

const metadata = (): EventMetadata => ({
  tenantId: 'bench-tenant',
  contextId: 'bench-context',
  accountId: 'bench-account',
  actorKeyId: 'bench-key',
  userId: null,
  requestId: randomUUID(),
  occurredAt: new Date().toISOString(),
  schemaVersion: EVENT_SCHEMA_VERSION,
});

/** 1a: one small event to a new stream per append ('no_stream'), 32 appenders. */
export async function rawAppend(dataDir: string, t: Timing): Promise<LoadResult> {
  const sql = await openSql({ dataDir });
  try {
    const store = await PostgresEventStore.open(sql);
    const run = `${Date.now().toString(36)}`;
    return await closedLoop({
      ...t,
      op: async (_w, seq) => {
        await store.append(
          `bench-${run}-${seq}`,
          [{ id: randomUUID(), type: 'BenchAppended', data: { n: seq }, metadata: metadata() }],
          'no_stream',
        );
      },
    });
  } finally {
    await sql.close();
  }
}

/**
 * 1a': what a record create must do underneath: commit() (event validation,
 * group-committed append of one RecordCreated to a new record stream) and the
 * read-your-writes wait for the read models (ProjectionRunner with the
 * service's readModelProjections, in-process barrier). No schema/reservation
 * reads, no HTTP.
 */
export async function rawAppendAndProject(dataDir: string, t: Timing): Promise<LoadResult> {
  const sql = await openSql({ dataDir });
  const store = await PostgresEventStore.open(sql);
  const runner = new ProjectionRunner('read-models', sql, store, readModelProjections({}));
  try {
    await runner.init();
    runner.start();
    const secret = Buffer.from('bench-secret');
    const deps: CommandDeps = {
      store,
      barrier: inProcessBarrier(runner),
      ids: { newId: () => randomUUID() },
      sealer: new PayloadSealer(deriveKey(secret, 'payload-seal'), deriveKey(secret, 'blind-index')),
    };
    const schemaId = randomUUID();
    // The history projection looks the schema up for every RecordCreated, as in the service.
    await commit(deps, metadata(), [
      {
        streamId: streams.schema(schemaId),
        events: [
          { type: 'SchemaCreated', data: { schemaId, typeName: BENCH_SCHEMA.typeName, definition: BENCH_SCHEMA } },
        ],
        expectedRevision: 'no_stream',
      },
    ]);
    return await closedLoop({
      ...t,
      op: async (_w, seq) => {
        const recordId = randomUUID();
        const events = [
          {
            type: 'RecordCreated' as const,
            data: {
              recordId,
              schemaId,
              schemaVersion: 1,
              typeName: BENCH_SCHEMA.typeName,
              payload: benchPayload(seq),
              status: 'ACTIVE',
              folderId: null,
              userId: null,
              scopes: [],
              externalId: null,
              indexMode: 'NONE',
            },
          },
        ];
        await commit(deps, metadata(), [
          { streamId: streams.record(recordId), events: events as never, expectedRevision: 'no_stream' },
        ]);
      },
    });
  } finally {
    await runner.stop();
    await store.close();
    await sql.close();
  }
}

/** 2 raw: the read-model queries the GET routes run (RecordReads), on a copy of the service's own data. */
export async function rawReads(
  dataDir: string,
  t: Timing,
  w: { ids: string[]; tenantId: string; contextId: string; typeName: string },
): Promise<{ byId: LoadResult; list: LoadResult; listRows: number; lookup: LoadResult }> {
  const sql = await openSql({ dataDir });
  try {
    const reads = new RecordReads(sql);
    const byId = await closedLoop({
      ...t,
      op: async (_w, seq) => {
        const r = await reads.byId(w.ids[seq % w.ids.length]);
        if (!r) throw new Error('raw byId: not found');
      },
    });
    let listRows = 0;
    const list = await closedLoop({
      ...t,
      op: async () => {
        // Same arguments as GET /v1/records?type=X&limit=20 with a root key: limit + 1 rows, no cursor.
        const rows = await reads.list(
          w.tenantId,
          w.contextId,
          { type: w.typeName, scopeUserId: undefined, scopeAnyOf: undefined },
          undefined,
          21,
        );
        listRows = rows.length;
      },
    });
    // The same exact lookup as GET /v1/records/lookup?type=X&field=tag&value=tN&limit=20: the index query, then the
    // rows.
    const principal: Principal = {
      credentialId: 'bench',
      kind: 'root',
      accountId: '',
      tenantId: w.tenantId,
      environment: 'live',
      contextId: w.contextId,
      crossContext: true,
      allowedActions: ['*'],
      dataScope: null,
      userId: null,
      wireVersionPin: null,
    };
    const lookup = await closedLoop({
      ...t,
      op: async (_w, seq) => {
        const plan = planLookup(
          BENCH_SCHEMA,
          { type: w.typeName, field: 'tag', value: `t${seq % 16}` },
          'GET',
          () => '',
        );
        const hits = await runLookup(sql, principal, w.typeName, plan, undefined, 21);
        await reads.byIds(hits.slice(0, 20).map((h) => h.record_id));
      },
    });
    return { byId, list, listRows, lookup };
  } finally {
    await sql.close();
  }
}
