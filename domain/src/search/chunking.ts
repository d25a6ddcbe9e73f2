/**
 * Passages: text is cut into chunks of about `maxChars` at sentence boundaries
 * (a sentence longer than that is cut between words). Each chunk also gets a
 * wider `contextText`: the chunk with its neighbours on both sides, so a reader
 * sees what surrounds the hit.
 */
export interface Passage {
  chunkNo: number;
  chunkText: string;
  contextText: string;
}

export interface ChunkOptions {
  /** Target chunk size in characters (default 2000). */
  maxChars?: number;
  /** Characters of each neighbouring chunk added to `contextText` (default 350). */
  contextChars?: number;
}

const SENTENCE_END = /(?<=[.!?;])\s+(?=\S)|\n\s*\n+/;

function splitLong(sentence: string, max: number): string[] {
  if (sentence.length <= max) return [sentence];
  const out: string[] = [];
  let cur = '';
  for (const w of sentence.split(/\s+/)) {
    if (cur && cur.length + 1 + w.length > max) {
      out.push(cur);
      cur = '';
    }
    // a single "word" longer than max (e.g. a base64 blob) is cut hard
    for (let rest = w; rest.length; rest = rest.slice(max)) {
      const piece = rest.slice(0, max);
      if (piece.length === max && rest.length > max) out.push(piece);
      else cur = cur ? `${cur} ${piece}` : piece;
    }
  }
  if (cur) out.push(cur);
  return out;
}

/** Whitespace that the chunker rewrites: a run of two, or any whitespace other than a plain space. */
const SQUASHED = /\s\s|[^\S ]/;

export function chunkText(text: string, o: ChunkOptions = {}): Passage[] {
  const max = o.maxChars ?? 2000;
  // A short text whose whitespace is already single spaces is one passage, itself trimmed: what the sentence split
  // below would rejoin, without a copy of every sentence (the common record body; a tenth of a searchable create's
  // allocation went there).
  if (text.length <= max && !SQUASHED.test(text)) {
    const c = text.trim();
    return c ? [{ chunkNo: 0, chunkText: c, contextText: c }] : [];
  }
  return chunkSentences(text, o);
}

/** The general case of chunkText (exported for its test: both agree wherever the short path applies). */
export function chunkSentences(text: string, o: ChunkOptions = {}): Passage[] {
  const max = o.maxChars ?? 2000;
  const ctx = o.contextChars ?? 350;
  const sentences = text
    .replace(/\r\n?/g, '\n')
    .split(SENTENCE_END)
    .map((s) => s.replace(/\s+/g, ' ').trim())
    .filter(Boolean)
    .flatMap((s) => splitLong(s, max));
  const chunks: string[] = [];
  let cur = '';
  for (const s of sentences) {
    if (cur && cur.length + 1 + s.length > max) {
      chunks.push(cur);
      cur = '';
    }
    cur = cur ? `${cur} ${s}` : s;
  }
  if (cur) chunks.push(cur);
  return chunks.map((c, i) => ({ chunkNo: i, chunkText: c, contextText: contextOf(chunks, i, ctx) }));
}

/** The `contextText` of chunk `i`: the chunk with up to `contextChars` of each neighbour. */
export function contextOf(chunks: string[], i: number, contextChars = 350): string {
  const before = i > 0 ? tail(chunks[i - 1], contextChars) : '';
  const after = i < chunks.length - 1 ? head(chunks[i + 1], contextChars) : '';
  return [before, chunks[i], after].filter(Boolean).join(' ');
}

/** The last `n` characters, starting at a word boundary. */
function tail(s: string, n: number): string {
  if (s.length <= n) return s;
  const cut = s.slice(s.length - n);
  const sp = cut.indexOf(' ');
  return '…' + (sp >= 0 ? cut.slice(sp + 1) : cut);
}
function head(s: string, n: number): string {
  if (s.length <= n) return s;
  const cut = s.slice(0, n);
  const sp = cut.lastIndexOf(' ');
  return (sp > 0 ? cut.slice(0, sp) : cut) + '…';
}
