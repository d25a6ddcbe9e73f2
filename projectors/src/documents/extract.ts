import { Worker } from 'node:worker_threads';

/**
 * Text extraction from uploaded files, with the maintained libraries: unpdf
 * (PDF), mammoth (DOCX), html-to-text (HTML); text, markdown, CSV and JSON are
 * decoded as UTF-8. A type without an extractor yields `unsupported`; a file
 * over one of the extraction limits yields `limit` (a terminal outcome: the
 * worker records FAILED, or STORED for indexMode NONE); a file the library
 * cannot read throws (the worker records FAILED).
 *
 * PDF, DOCX and HTML are parsed off the main thread: each file in a
 * worker_thread of its own (extract-worker.mjs) with a heap limit and a
 * wall-clock timeout, terminated once it answers, so a hostile or heavy file
 * costs that thread, never the service's event loop or heap.
 */
export const DOCX_TYPE = 'application/vnd.openxmlformats-officedocument.wordprocessingml.document';

const MiB = 1024 * 1024;

// ---- Extraction limits (docs/documents.md "Extraction limits"): all of them, here. ----
/** Files above this are not extracted in memory (FAILED, or STORED for indexMode NONE). */
export const MAX_EXTRACT_BYTES = 20 * MiB;
/**
 * A DOCX (zip) may unzip to at most this much, all entries together: checked on the declared sizes, then while
 * inflating.
 */
export const MAX_INFLATED_BYTES = 64 * MiB;
/** PDFs with more pages are not extracted. */
export const MAX_PDF_PAGES = 2_000;
/** Extracted text above this (UTF-8 bytes) is not kept or indexed. */
export const MAX_EXTRACTED_TEXT_BYTES = 16 * MiB;
/** Heap (V8 old generation) of one extraction thread. */
export const EXTRACT_HEAP_MB = 512;
/** Wall-clock time of one file's extraction; the thread is terminated past it. */
export const EXTRACT_TIMEOUT_MS = 60_000;
/** Extraction threads running at once in this process (further files wait their turn). */
export const MAX_PARALLEL_EXTRACTIONS = 2;
/**
 * Extraction attempts of one upload cut short by the process stopping or dying; then it is FAILED (document worker).
 */
export const MAX_EXTRACTION_ATTEMPTS = 3;

export interface ExtractionLimits {
  maxFileBytes: number;
  maxInflatedBytes: number;
  maxPdfPages: number;
  maxTextBytes: number;
  heapMb: number;
  timeoutMs: number;
}

export const EXTRACTION_LIMITS: Readonly<ExtractionLimits> = Object.freeze({
  maxFileBytes: MAX_EXTRACT_BYTES,
  maxInflatedBytes: MAX_INFLATED_BYTES,
  maxPdfPages: MAX_PDF_PAGES,
  maxTextBytes: MAX_EXTRACTED_TEXT_BYTES,
  heapMb: EXTRACT_HEAP_MB,
  timeoutMs: EXTRACT_TIMEOUT_MS,
});

export const EXTRACTABLE_TYPES = [
  'text/plain',
  'text/markdown',
  'text/x-markdown',
  'text/html',
  'application/json',
  'text/csv',
  'application/pdf',
  DOCX_TYPE,
] as const;
/** Parsed in an extraction thread (the rest is a UTF-8 decode, done in place). */
const THREAD_TYPES = new Set(['text/html', 'application/pdf', DOCX_TYPE]);

export type Extraction =
  { kind: 'text'; text: string } | { kind: 'unsupported'; reason: string } | { kind: 'limit'; message: string };

/** Thrown when the caller's signal stops an extraction: no outcome, nothing to record. */
export class ExtractionAbortedError extends Error {
  constructor() {
    super('Text extraction was stopped (aborted)');
    this.name = 'ExtractionAbortedError';
  }
}

const baseType = (t: string) => t.split(';')[0].trim().toLowerCase();
const mib = (n: number) => `${Number.isInteger(n / MiB) ? n / MiB : (n / MiB).toFixed(1)} MiB`;
const duration = (ms: number) => (ms >= 1000 ? `${ms / 1000} s` : `${ms} ms`);

export function canExtract(fileType: string): boolean {
  return (EXTRACTABLE_TYPES as readonly string[]).includes(baseType(fileType));
}

export async function extractText(
  fileType: string,
  data: Buffer,
  opts: { limits?: ExtractionLimits; signal?: AbortSignal } = {},
): Promise<Extraction> {
  const limits = opts.limits ?? EXTRACTION_LIMITS;
  const type = baseType(fileType);
  if (!canExtract(type)) return { kind: 'unsupported', reason: `No text extractor for ${type}` };
  if (data.length > limits.maxFileBytes)
    return { kind: 'limit', message: `The file is larger than the ${mib(limits.maxFileBytes)} text extraction limit` };
  if (THREAD_TYPES.has(type)) return runInThread(type, data, limits, opts.signal);
  // text/plain, markdown, CSV, JSON (kept as written: keys and values are both searchable text).
  const text = new TextDecoder('utf-8', { fatal: false }).decode(data);
  if (Buffer.byteLength(text, 'utf8') > limits.maxTextBytes)
    return { kind: 'limit', message: `The extracted text is larger than the ${mib(limits.maxTextBytes)} limit` };
  return { kind: 'text', text };
}

// ---- Extraction threads ----

let running = 0;
const waiting: Array<() => void> = [];

async function acquire(signal?: AbortSignal): Promise<void> {
  if (running < MAX_PARALLEL_EXTRACTIONS) {
    running++;
    return;
  }
  await new Promise<void>((resolve, reject) => {
    const go = () => {
      signal?.removeEventListener('abort', stop);
      running++;
      resolve();
    };
    const stop = () => {
      const i = waiting.indexOf(go);
      if (i >= 0) waiting.splice(i, 1);
      reject(new ExtractionAbortedError());
    };
    waiting.push(go);
    signal?.addEventListener('abort', stop, { once: true });
  });
}

function release(): void {
  running--;
  waiting.shift()?.();
}

type ThreadAnswer =
  { kind: 'text'; text: string } | { kind: 'limit'; message: string } | { kind: 'error'; message: string };

/**
 * One file, one thread: heap-limited (resourceLimits), terminated after its
 * answer, at the timeout, or when `signal` aborts. Running out of heap ends the
 * thread (ERR_WORKER_OUT_OF_MEMORY), not the process.
 */
async function runInThread(
  type: string,
  data: Buffer,
  limits: ExtractionLimits,
  signal?: AbortSignal,
): Promise<Extraction> {
  if (signal?.aborted) throw new ExtractionAbortedError();
  await acquire(signal);
  try {
    return await new Promise<Extraction>((resolve, reject) => {
      const copy = new Uint8Array(data); // its own ArrayBuffer, moved to the thread
      // Plain .mjs: no TypeScript loader needed in the thread; execArgv [] keeps the parent's loaders and heap flags
      // out.
      const worker = new Worker(new URL('./extract-worker.mjs', import.meta.url), {
        execArgv: [],
        workerData: {
          type,
          data: copy,
          limits: {
            maxInflatedBytes: limits.maxInflatedBytes,
            maxPdfPages: limits.maxPdfPages,
            maxTextBytes: limits.maxTextBytes,
          },
        },
        transferList: [copy.buffer],
        resourceLimits: { maxOldGenerationSizeMb: limits.heapMb },
      });
      let done = false;
      const finish = (settle: () => void) => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        void worker.terminate().catch(() => {});
        settle();
      };
      const timer = setTimeout(
        () =>
          finish(() =>
            resolve({
              kind: 'limit',
              message: `Text extraction took longer than the ${duration(limits.timeoutMs)} time limit`,
            }),
          ),
        limits.timeoutMs,
      );
      const onAbort = () => finish(() => reject(new ExtractionAbortedError()));
      signal?.addEventListener('abort', onAbort, { once: true });
      worker.on('message', (m: ThreadAnswer) =>
        finish(() => (m.kind === 'error' ? reject(new Error(m.message)) : resolve(m))),
      );
      worker.on('error', (e: Error & { code?: string }) =>
        finish(() =>
          e.code === 'ERR_WORKER_OUT_OF_MEMORY'
            ? resolve({
                kind: 'limit',
                message: `Text extraction needed more than the ${limits.heapMb} MiB memory limit`,
              })
            : reject(e),
        ),
      );
      worker.on('exit', (code) =>
        finish(() => reject(new Error(`the extraction thread stopped without an answer (exit code ${code})`))),
      );
    });
  } finally {
    release();
  }
}
