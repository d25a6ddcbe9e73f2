import { createHash } from 'node:crypto';
import { createReadStream, createWriteStream, existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import { createInterface } from 'node:readline';
import { once } from 'node:events';
import { createGunzip, createGzip } from 'node:zlib';
import type { AppendRequest, EventStore } from '@svc/domain';

/**
 * The backup file (docs/operations.md "Backup and restore"): gzipped JSON lines. The first line is the
 * manifest (format, version, creation time, the log position the backup stops at, where the secret came from),
 * then one line per event of the log from position 1 up to that position, then one line per file
 * (`service-secret.key`, `bootstrap.json`) and per blob, and last a trailer with the counts and the SHA-256 of
 * every line before it, so a truncated or altered file is refused before anything is restored.
 */
export const BACKUP_FORMAT = 'svc-backup';
export const BACKUP_VERSION = 1;

export interface BackupManifest {
  t: 'manifest';
  format: typeof BACKUP_FORMAT;
  version: number;
  created: string;
  /** The log is backed up up to and including this position (the head when the backup started). */
  position: number;
  /**
   * 'file': DATA_DIR/service-secret.key is in the backup; 'env': SERVICE_SECRET was set, the restored service needs the
   * same value.
   */
  secretSource: 'file' | 'env';
  /**
   * 'included': the blob files under DATA_DIR/blobs are in the backup; 'object-store': OBJECT_STORE_URL holds them, not
   * this file.
   */
  blobs: 'included' | 'object-store';
  /**
   * The checkpoints of the subscribers with effects outside the read models (REACTORS), capped at `position`: the
   * restored ones resume there, so what they had done (webhooks sent, triggers fired, files extracted) is not done
   * again.
   */
  reactors: Record<string, number>;
}

/**
 * Subscribers whose work is not a projection: sends, trigger runs and extractions that a replay from 0 would repeat.
 */
export const REACTORS = ['webhook-dispatcher', 'trigger-runner', 'document-worker'];

type EventLine = {
  t: 'event';
  position: number;
  streamId: string;
  revision: number;
  id: string;
  type: string;
  data: Record<string, unknown>;
  metadata: Record<string, unknown>;
};
type FileLine = { t: 'file'; name: string; data: string };
type BlobLine = { t: 'blob'; key: string; data: string };
type Trailer = { t: 'end'; events: number; blobs: number; sha256: string };

export interface BackupSource {
  store: EventStore;
  /** DATA_DIR: service-secret.key and bootstrap.json are taken from here when present. */
  dataDir: string;
  secretSource: 'file' | 'env';
  /** DATA_DIR/blobs, or undefined when the blobs are in an object store. */
  blobsDir?: string;
  /** The reactors' checkpoints (read after the head: a position past it is capped, as everything up to it was done). */
  reactors?: () => Promise<Record<string, number>>;
  now?: () => Date;
}

export interface BackupResult {
  position: number;
  events: number;
  blobs: number;
  bytes: number;
}

const PAGE = 2000;

/** Every file under `dir`, as keys relative to it ('/'-separated), temporary files of unfinished puts left out. */
function blobKeys(dir: string): string[] {
  const out: string[] = [];
  const walk = (d: string) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.isFile() && !e.name.startsWith('.tmp-')) out.push(relative(dir, p).split(sep).join('/'));
    }
  };
  if (existsSync(dir)) walk(dir);
  return out.sort();
}

/**
 * Writes the backup to `file`. Consistent while the service runs: the head is read first and only events up to it
 * are copied (a prefix of the log; later appends are left for the next backup). Blobs are written once and never
 * rewritten under the same key, so copying them after the log cannot miss one an event up to the head refers to.
 */
export async function writeBackup(src: BackupSource, file: string): Promise<BackupResult> {
  const position = await src.store.headPosition();
  const gzip = createGzip({ level: 1 });
  const out = createWriteStream(file, { mode: 0o600 });
  gzip.pipe(out);
  const hash = createHash('sha256');
  let bytes = 0;
  const line = async (value: unknown) => {
    const text = JSON.stringify(value) + '\n';
    hash.update(text);
    bytes += text.length;
    if (!gzip.write(text)) await once(gzip, 'drain');
  };
  const manifest: BackupManifest = {
    t: 'manifest',
    format: BACKUP_FORMAT,
    version: BACKUP_VERSION,
    created: (src.now?.() ?? new Date()).toISOString(),
    position,
    secretSource: src.secretSource,
    blobs: src.blobsDir ? 'included' : 'object-store',
    reactors: Object.fromEntries(
      Object.entries((await src.reactors?.()) ?? {}).map(([k, v]) => [k, Math.min(v, position)]),
    ),
  };
  await line(manifest);
  let events = 0;
  for (let after = 0; after < position;) {
    const page = await src.store.readAll(after, PAGE);
    if (page.length === 0) break;
    for (const e of page) {
      if (e.position > position) break;
      const l: EventLine = {
        t: 'event',
        position: e.position,
        streamId: e.streamId,
        revision: e.revision,
        id: e.id,
        type: e.type,
        data: e.data as Record<string, unknown>,
        metadata: e.metadata as unknown as Record<string, unknown>,
      };
      await line(l);
      events++;
    }
    after = page[page.length - 1].position;
  }
  for (const name of ['service-secret.key', 'bootstrap.json']) {
    const p = join(src.dataDir, name);
    if (existsSync(p) && statSync(p).isFile())
      await line({ t: 'file', name, data: readFileSync(p).toString('base64') } satisfies FileLine);
  }
  let blobs = 0;
  if (src.blobsDir)
    for (const key of blobKeys(src.blobsDir)) {
      await line({
        t: 'blob',
        key,
        data: readFileSync(join(src.blobsDir, ...key.split('/'))).toString('base64'),
      } satisfies BlobLine);
      blobs++;
    }
  const trailer: Trailer = { t: 'end', events, blobs, sha256: hash.digest('hex') };
  const text = JSON.stringify(trailer) + '\n';
  bytes += text.length;
  gzip.end(text);
  await once(out, 'close');
  return { position, events, blobs, bytes };
}

/**
 * Reads the file through once, checking the trailer's counts and checksum: a damaged backup is refused before any
 * write.
 */
export async function verifyBackup(file: string): Promise<{ manifest: BackupManifest; events: number; blobs: number }> {
  let manifest: BackupManifest | undefined;
  let trailer: Trailer | undefined;
  let events = 0;
  let blobs = 0;
  const hash = createHash('sha256');
  for await (const text of lines(file)) {
    if (trailer) throw new Error('the backup has lines after its trailer');
    const v = JSON.parse(text) as { t: string };
    if (v.t === 'end') {
      trailer = v as Trailer;
      continue;
    }
    hash.update(text + '\n');
    if (!manifest) {
      if (v.t !== 'manifest' || (v as BackupManifest).format !== BACKUP_FORMAT)
        throw new Error('not a backup file of this service');
      manifest = v as BackupManifest;
      if (manifest.version !== BACKUP_VERSION)
        throw new Error(
          `backup format version ${manifest.version} is not supported (this version reads ${BACKUP_VERSION})`,
        );
    } else if (v.t === 'event') events++;
    else if (v.t === 'blob') blobs++;
  }
  if (!manifest) throw new Error('the backup is empty');
  if (!trailer) throw new Error('the backup is truncated (no trailer): take it again');
  if (trailer.sha256 !== hash.digest('hex') || trailer.events !== events || trailer.blobs !== blobs)
    throw new Error('the backup is damaged (checksum or counts differ from its trailer)');
  if (events !== manifest.position)
    throw new Error(`the backup holds ${events} events but stops at position ${manifest.position}`);
  return { manifest, events, blobs };
}

async function* lines(file: string): AsyncGenerator<string> {
  const rl = createInterface({ input: createReadStream(file).pipe(createGunzip()), crlfDelay: Infinity });
  for await (const l of rl) if (l) yield l;
}

export interface RestoreTarget {
  /** An empty event store: events are appended with their ids, streams and revisions, at the same positions. */
  store: EventStore;
  writeFile(name: string, data: Buffer): Promise<void>;
  /** Undefined when the blobs live in an object store (not in the file). */
  putBlob?(key: string, data: Buffer): Promise<void>;
}

const CHUNK = 2000;

/**
 * Appends the backup's events to `target.store` in their order, a chunk at a time (the chunk's appends are issued
 * together so the adapter writes them in one transaction), then its files and blobs. Each event lands at the position
 * it had: the log's positions are dense from 1, and the restored log is written from an empty one.
 */
export async function restoreBackup(
  file: string,
  target: RestoreTarget,
): Promise<{ manifest: BackupManifest; events: number; blobs: number }> {
  const { manifest } = await verifyBackup(file);
  if ((await target.store.headPosition()) !== 0) throw new Error('the target event store is not empty');
  let chunk: EventLine[] = [];
  let events = 0;
  let blobs = 0;
  const flush = async () => {
    if (chunk.length === 0) return;
    // Consecutive events of one stream form one request; a stream seen again after another starts a new group
    // (appendMulti takes a stream once), and groups are issued in order so positions follow the file's.
    const groups: AppendRequest[][] = [[]];
    let seen = new Set<string>();
    let last: AppendRequest | undefined;
    for (const e of chunk) {
      const ev = { id: e.id, type: e.type, data: e.data, metadata: e.metadata as never };
      if (last && last.streamId === e.streamId) {
        last.events.push(ev);
        continue;
      }
      if (seen.has(e.streamId)) {
        groups.push([]);
        seen = new Set();
      }
      seen.add(e.streamId);
      last = { streamId: e.streamId, events: [ev], expectedRevision: e.revision === 0 ? 'no_stream' : e.revision - 1 };
      groups[groups.length - 1].push(last);
    }
    const results = await Promise.all(groups.map((g) => target.store.appendMulti(g)));
    const lastPosition = results.at(-1)!.at(-1)!.position;
    const expected = chunk[chunk.length - 1].position;
    if (lastPosition !== expected)
      throw new Error(
        `restored event landed at position ${lastPosition}, expected ${expected}: the target log was ` +
          `written to meanwhile`,
      );
    events += chunk.length;
    chunk = [];
  };
  for await (const text of lines(file)) {
    const v = JSON.parse(text) as EventLine | FileLine | BlobLine | Trailer | BackupManifest;
    if (v.t === 'event') {
      chunk.push(v);
      if (chunk.length >= CHUNK) await flush();
    } else if (v.t === 'file') {
      await flush();
      await target.writeFile(v.name, Buffer.from(v.data, 'base64'));
    } else if (v.t === 'blob') {
      await flush();
      if (target.putBlob) await target.putBlob(v.key, Buffer.from(v.data, 'base64'));
      blobs++;
    }
  }
  await flush();
  return { manifest, events, blobs };
}
