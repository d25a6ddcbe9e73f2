import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempDir } from '../support/engines';
import { ROOT, startService, type TestService } from '../support/service';

/**
 * The served `/openapi.json` passes `redocly lint` with the recommended rules
 * (redocly.yaml): 0 errors and 0 warnings (issue 20). It also carries the spec's
 * operation names (decisions §1), unique operation ids, and the inference streams
 * as text/event-stream. Runs in CI with `npm test`; the linter runs offline.
 */
type Operation = {
  operationId?: string;
  tags?: string[];
  responses: Record<string, { $ref?: string; content?: Record<string, unknown> }>;
};
type Doc = { servers: Array<{ url: string }>; paths: Record<string, Record<string, Operation>> };

let svc: TestService;
let doc: Doc;
const PUBLIC_URL = 'https://api.service.test';

beforeAll(async () => {
  svc = await startService({ env: { PUBLIC_URL } });
  const r = await svc.api.get('/openapi.json');
  expect(r.status).toBe(200);
  doc = r.body as Doc;
});

afterAll(async () => {
  await svc?.stop();
});

const operations = () =>
  Object.entries(doc.paths).flatMap(([path, ops]) =>
    Object.entries(ops).map(([method, op]) => ({ at: `${method.toUpperCase()} ${path}`, op })),
  );

/** The spec's operation names (service-spec.md, decisions §1) at their method and path. */
const SPEC_NAMES: Record<string, string> = {
  'POST /v1/schemas': 'createSchema',
  'GET /v1/schemas': 'listSchemas',
  'GET /v1/schemas/{id}': 'getSchema',
  'PUT /v1/schemas/{id}': 'updateSchema',
  'DELETE /v1/schemas/{id}': 'deleteSchema',
  'GET /v1/schemas/{id}/versions': 'getSchemaVersions',
  'POST /v1/records': 'createRecord',
  'GET /v1/records': 'listRecords',
  'GET /v1/records/{id}': 'getRecord',
  'PUT /v1/records/{id}': 'updateRecord',
  'PATCH /v1/records/{id}': 'patchRecord',
  'DELETE /v1/records/{id}': 'deleteRecord',
  'GET /v1/records/{id}/versions': 'getRecordVersions',
  'GET /v1/records/{id}/tombstone': 'getRecordTombstone',
  'GET /v1/records/lookup': 'lookupRecords',
  'POST /v1/records/lookup': 'lookupRecordsByBody',
  'POST /v1/documents': 'ingestDocument',
  'GET /v1/documents': 'listDocuments',
  'POST /v1/documents/upload': 'uploadDocument',
  'GET /v1/documents/{id}': 'getDocument',
  'PUT /v1/documents/{id}': 'updateDocument',
  'PATCH /v1/documents/{id}': 'patchDocument',
  'DELETE /v1/documents/{id}': 'deleteDocument',
  'GET /v1/documents/{id}/text': 'getDocumentText',
  'GET /v1/documents/{id}/download-url': 'getDocumentDownloadUrl',
  'GET /v1/documents/{id}/versions': 'getDocumentVersions',
  'GET /v1/documents/lookup': 'lookupDocuments',
  'POST /v1/documents/lookup': 'lookupDocumentsByBody',
  'POST /v1/folders': 'createFolder',
  'GET /v1/folders': 'listFolders',
  'GET /v1/folders/{id}': 'getFolder',
  'PUT /v1/folders/{id}': 'updateFolder',
  'PATCH /v1/folders/{id}': 'patchFolder',
  'DELETE /v1/folders/{id}': 'deleteFolder',
  'GET /v1/folders/{id}/versions': 'getFolderVersions',
  'POST /v1/search': 'searchContent',
  'POST /v1/tokens': 'mintToken',
};

describe('/openapi.json', () => {
  it('passes redocly lint (recommended rules) with 0 errors and 0 warnings', () => {
    const tmp = tempDir('svc-openapi-');
    try {
      const file = join(tmp.dir, 'openapi.json');
      writeFileSync(file, JSON.stringify(doc, null, 2));
      const r = spawnSync(
        process.execPath,
        [
          join(ROOT, 'node_modules/@redocly/cli/bin/cli.js'),
          'lint',
          file,
          '--config',
          join(ROOT, 'redocly.yaml'),
          '--format=json',
          '--max-problems=1000',
        ],
        {
          cwd: tmp.dir,
          encoding: 'utf8',
          env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true', NO_COLOR: '1' },
          timeout: 60_000,
        },
      );
      const out = r.stdout.slice(r.stdout.indexOf('{'));
      let report: {
        totals: { errors: number; warnings: number };
        problems: Array<{ ruleId: string; message: string; location: Array<{ pointer: string }> }>;
      };
      try {
        report = JSON.parse(out);
      } catch {
        throw new Error(`redocly lint did not report (exit ${r.status}): ${r.stdout}\n${r.stderr}`);
      }
      const problems = report.problems.map((p) => `${p.ruleId}: ${p.message} at ${p.location[0]?.pointer}`);
      expect(problems).toEqual([]);
      expect(report.totals).toMatchObject({ errors: 0, warnings: 0 });
      expect(r.status).toBe(0);
    } finally {
      tmp.remove();
    }
  });

  it('names every operation once, with the spec operation names where the spec has them', () => {
    const seen = new Map<string, string>();
    for (const { at, op } of operations()) {
      expect(op.operationId, at).toMatch(/^[a-z][A-Za-z0-9]*$/);
      expect(seen.get(op.operationId!), `${op.operationId} at ${at}`).toBeUndefined();
      seen.set(op.operationId!, at);
      expect(op.tags?.length, at).toBe(1);
    }
    const named = Object.fromEntries(operations().map(({ at, op }) => [at, op.operationId]));
    for (const [at, name] of Object.entries(SPEC_NAMES)) expect(named[at], at).toBe(name);
  });

  it('serves from PUBLIC_URL and lists the error body for every documented error status', () => {
    expect(doc.servers).toEqual([expect.objectContaining({ url: PUBLIC_URL })]);
    for (const { at, op } of operations()) {
      const errors = Object.keys(op.responses).filter((s) => /^4\d\d$/.test(s));
      expect(errors.length, at).toBeGreaterThan(0);
      for (const s of errors) expect(op.responses[s].$ref, `${at} ${s}`).toMatch(/^#\/components\/responses\//);
    }
  });

  it('describes RAG, document ask and chat as text/event-stream with their events', () => {
    const events = (path: string) => {
      const ok = doc.paths[path].post.responses['200'];
      expect(Object.keys(ok.content ?? {})).toEqual(['text/event-stream']);
      const ref = (ok.content!['text/event-stream'] as { schema: { $ref: string } }).schema.$ref;
      const union = (doc as unknown as { components: { schemas: Record<string, { oneOf: Array<{ $ref: string }> }> } })
        .components.schemas[ref.split('/').pop()!];
      return union.oneOf.map((o) => o.$ref.split('/').pop());
    };
    expect(events('/v1/rag')).toEqual([
      'SearchResultsEvent',
      'TruncationWarningEvent',
      'ContentDeltaEvent',
      'DoneEvent',
      'ErrorEvent',
    ]);
    expect(events('/v1/documents/{id}/ask')).toEqual([
      'DocumentContextEvent',
      'ContentDeltaEvent',
      'DoneEvent',
      'ErrorEvent',
    ]);
    expect(events('/v1/chat')).toEqual(['ContentDeltaEvent', 'DoneEvent', 'ErrorEvent']);
  });
});
