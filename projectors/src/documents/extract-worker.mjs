// Text extraction of one uploaded file, in a worker_thread of its own (see
// runInThread in extract.ts, which starts it with a heap limit and a wall-clock
// timeout, and terminates it once it answers).
//
// Plain JavaScript on purpose: a worker_thread does not inherit the TypeScript
// loader under every runner (tsx, vitest, plain node), and this file needs
// none. The limits come from extract.ts (EXTRACTION_LIMITS) in workerData:
//
//   in:  workerData { type, data: Uint8Array, limits: { maxInflatedBytes, maxPdfPages, maxTextBytes } }
//   out: { kind: 'text', text }            extracted
//        { kind: 'limit', message }        the file breaks a limit (terminal, message shown to the user)
//        { kind: 'error', message }        the library could not read the file
import { parentPort, workerData } from 'node:worker_threads';

class LimitError extends Error {}

const MiB = 1024 * 1024;
const mib = (n) => `${Number.isInteger(n / MiB) ? n / MiB : (n / MiB).toFixed(1)} MiB`;

const tooBigUnzipped = (limits, size) =>
  new LimitError(
    `The file expands to ${size === undefined ? 'more than' : mib(size)} when unzipped, over the ` +
      `${mib(limits.maxInflatedBytes)} extraction limit`,
  );

/**
 * DOCX: the zip's central directory is read first (JSZip inflates nothing on
 * load) and the declared uncompressed sizes are summed; then every entry is
 * inflated as a stream, counting bytes, and stopped past the limit (declared
 * sizes can lie). Only then does mammoth read it (it inflates the same entries
 * again, now known to be within the limit).
 */
async function docx(data, limits) {
  const { default: JSZip } = await import('jszip');
  const zip = await JSZip.loadAsync(data);
  const entries = Object.values(zip.files).filter((f) => !f.dir);
  // _data.uncompressedSize: the central directory's figure (JSZip keeps it on each loaded entry).
  const declared = entries.reduce((n, f) => n + (Number(f._data?.uncompressedSize) || 0), 0);
  if (declared > limits.maxInflatedBytes) throw tooBigUnzipped(limits, declared);
  let inflated = 0;
  for (const f of entries) {
    await new Promise((resolve, reject) => {
      const s = f.internalStream('uint8array');
      s.on('data', (chunk) => {
        inflated += chunk.length;
        if (inflated > limits.maxInflatedBytes) {
          s.pause();
          reject(tooBigUnzipped(limits));
        }
      })
        .on('error', reject)
        .on('end', resolve)
        .resume();
    });
  }
  const { default: mammoth } = await import('mammoth');
  const { value } = await mammoth.extractRawText({
    buffer: Buffer.from(data.buffer, data.byteOffset, data.byteLength),
  });
  return value;
}

async function pdf(data, limits) {
  const { extractText, getDocumentProxy } = await import('unpdf');
  const doc = await getDocumentProxy(data);
  try {
    if (doc.numPages > limits.maxPdfPages)
      throw new LimitError(`The PDF has ${doc.numPages} pages, over the ${limits.maxPdfPages}-page extraction limit`);
    const { text } = await extractText(doc, { mergePages: true });
    return text;
  } finally {
    await doc.destroy().catch(() => {});
  }
}

async function html(data) {
  const { convert } = await import('html-to-text');
  return convert(Buffer.from(data.buffer, data.byteOffset, data.byteLength).toString('utf8'), {
    wordwrap: false,
    selectors: [
      { selector: 'a', options: { ignoreHref: true } },
      { selector: 'img', format: 'skip' },
    ],
  });
}

const EXTRACTORS = {
  'application/vnd.openxmlformats-officedocument.wordprocessingml.document': docx,
  'application/pdf': pdf,
  'text/html': html,
};

async function run({ type, data, limits }) {
  const extract = EXTRACTORS[type];
  if (!extract) return { kind: 'error', message: `No text extractor for ${type} in the extraction thread` };
  try {
    const text = await extract(data, limits);
    if (Buffer.byteLength(text, 'utf8') > limits.maxTextBytes)
      return { kind: 'limit', message: `The extracted text is larger than the ${mib(limits.maxTextBytes)} limit` };
    return { kind: 'text', text };
  } catch (e) {
    if (e instanceof LimitError) return { kind: 'limit', message: e.message };
    return { kind: 'error', message: e instanceof Error ? e.message : String(e) };
  }
}

parentPort.postMessage(await run(workerData));
