import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT, startService, type TestService } from '../support/service';

/**
 * The README's quickstart, run as written: the ```sh blocks between `<!-- quickstart -->` and
 * `<!-- /quickstart -->`, in order, in one bash, against a started service. The only inputs are the variables the
 * quickstart itself reads (SVC, DATA_DIR with its bootstrap.json), so an edit of the README is what this runs.
 */
function quickstartBlocks(readme: string): string[] {
  const m = /<!-- quickstart -->([\s\S]*?)<!-- \/quickstart -->/.exec(readme);
  if (!m) throw new Error('README.md has no <!-- quickstart --> ... <!-- /quickstart --> section');
  return [...m[1]!.matchAll(/```sh\n([\s\S]*?)```/g)].map((b) => b[1]!);
}

/** SSE frames of a text holding several streams one after another: [event, data]. */
const frames = (text: string) => [...text.matchAll(/^event: (\S+)\ndata: (.*)$/gm)].map((f) => [f[1]!, f[2]!] as const);

describe('the README quickstart', () => {
  let svc: TestService;
  let dir: string;
  beforeAll(async () => {
    svc = await startService({ env: { DEFAULT_PLAN: 'free' } });
    // A data directory of its own holding the service's bootstrap.json, as `npm start` writes it.
    dir = mkdtempSync(join(tmpdir(), 'svc-quickstart-'));
    writeFileSync(join(dir, 'bootstrap.json'), JSON.stringify(svc.bootstrap, null, 2));
  });
  afterAll(async () => {
    await svc?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('runs from schema to record to search to a streamed answer and a streamed chat', async () => {
    const blocks = quickstartBlocks(readFileSync(join(ROOT, 'README.md'), 'utf8'));
    expect(blocks.length).toBeGreaterThanOrEqual(5);
    const script = ['set -euo pipefail', ...blocks].join('\n');
    // Asynchronously: the service answers from this process.
    const run = await new Promise<{ status: number | null; stdout: string; stderr: string }>((done) =>
      execFile(
        'bash',
        ['-c', script],
        {
          cwd: dir,
          env: { PATH: process.env.PATH, HOME: process.env.HOME, SVC: svc.url, DATA_DIR: dir },
          timeout: 60_000,
        },
        (err, stdout, stderr) => done({ status: err ? ((err as { code?: number }).code ?? -1) : 0, stdout, stderr }),
      ),
    );
    const out = run.stdout;
    expect(run.status, `${out}\n${run.stderr}`).toBe(0);

    // The schema: its JSON, then 201.
    expect(out).toMatch(/"typeName":"note"[^\n]*"schemaVersion":1[^\n]*\n201\n/);
    // The record: 201, its answer kept in record.json.
    expect(out).toMatch(/^201$/m);
    const record = JSON.parse(readFileSync(join(dir, 'record.json'), 'utf8'));
    expect(record).toMatchObject({ typeName: 'note', version: 1 });
    // The search: a hit on that record.
    const searchLine = out.split('\n').find((l) => l.startsWith('{"results"'));
    expect(searchLine, out).toBeDefined();
    const search = JSON.parse(searchLine!);
    expect(search.results.map((r: { documentId: string }) => r.documentId)).toContain(record.id);

    // Two streams: RAG (search_results, content_delta..., done) then chat (content_delta..., done).
    const f = frames(out);
    const [rag, chat] = [
      f.slice(0, f.findIndex(([e]) => e === 'done') + 1),
      f.slice(f.findIndex(([e]) => e === 'done') + 1),
    ];
    expect(rag[0]![0]).toBe('search_results');
    expect(JSON.parse(rag[0]![1]).results.map((r: { documentId: string }) => r.documentId)).toContain(record.id);
    const answer = (fs: (readonly [string, string])[]) =>
      fs
        .filter(([e]) => e === 'content_delta')
        .map(([, d]) => JSON.parse(d).delta)
        .join('');
    expect(answer(rag)).toMatch(/watered every morning at six/);
    expect(rag.at(-1)![0]).toBe('done');
    expect(answer(chat)).toMatch(/eight in the evening/);
    expect(chat.at(-1)![0]).toBe('done');
  });
});
