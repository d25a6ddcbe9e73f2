/**
 * The receiver snippets of docs/webhooks.md run as tests: the Node.js function, the Python function and the
 * openssl command each verify (or recompute) a signature the service's signing function made.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { signDelivery } from '@svc/domain';
import { tempDir } from '../support/engines';
import { ROOT } from '../support/service';

const doc = readFileSync(join(ROOT, 'docs/webhooks.md'), 'utf8');
const block = (lang: string) => {
  const m = new RegExp('```' + lang + '\\n([\\s\\S]*?)```').exec(doc);
  if (!m) throw new Error(`no ${lang} block in docs/webhooks.md`);
  return m[1];
};
const secret = 'c0ffee'.repeat(10) + 'beef';
const body =
  '{"id":"d1","version":"2024-01","type":"record.indexed","created":1,"tenantId":"t","livemode":false,' +
  '"data":{"id":"r1"}}';

describe('docs/webhooks.md receiver snippets', () => {
  const dir = tempDir('svc-webhook-docs-');
  const ts = String(Math.floor(Date.now() / 1000));
  const signature = signDelivery(secret, ts, body);
  afterAll(() => dir.remove());

  it('Node.js', async () => {
    const file = join(dir.dir, 'verify.mjs');
    writeFileSync(file, block('js'));
    const { verify } = await import(file);
    const headers = { 'x-service-timestamp': ts, 'x-service-signature': signature };
    expect(verify(secret, headers, Buffer.from(body))).toBe(true);
    expect(verify(secret, headers, Buffer.from(body + ' '))).toBe(false);
    expect(verify(secret, { ...headers, 'x-service-timestamp': String(Number(ts) - 301) }, Buffer.from(body))).toBe(
      false,
    );
  });

  it('Python', () => {
    const script =
      `${block('python')}\nimport sys\nprint(verify(sys.argv[1], {"X-Service-Timestamp": sys.argv[2], ` +
      `"X-Service-Signature": sys.argv[3]}, sys.argv[4].encode()))\n`;
    const run = (sig: string) => execFileSync('python3', ['-c', script, secret, ts, sig, body]).toString().trim();
    expect(run(signature)).toBe('True');
    expect(run(signature.replace(/.$/, (c) => (c === '0' ? '1' : '0')))).toBe('False');
  });

  it('openssl', () => {
    writeFileSync(join(dir.dir, 'body.json'), body);
    const sh = block('sh')
      .replace(/^TS=\S+/m, `TS=${ts}`)
      .replace(/^SECRET=\S+.*$/m, `SECRET=${secret}`);
    expect(execFileSync('sh', ['-c', sh], { cwd: dir.dir }).toString().trim()).toBe(signature);
  });
});
