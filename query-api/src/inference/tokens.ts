import { Tiktoken } from 'js-tiktoken/lite';

/**
 * Token counts (decisions §8: cl100k, by a maintained tokenizer library, js-tiktoken):
 * the 32,000-token document-ask limit, `inputTokens` / `outputTokens` and prices.
 * The encoder's tables take a second or two to load: loaded once, on first use or
 * at start (`warmTokenizer`).
 */
let encoder: Promise<Tiktoken> | undefined;

function load(): Promise<Tiktoken> {
  encoder ??= import('js-tiktoken/ranks/cl100k_base').then(
    (m) => new Tiktoken((m as { default: ConstructorParameters<typeof Tiktoken>[0] }).default),
  );
  return encoder;
}

export const warmTokenizer = (): Promise<void> => load().then(() => undefined);

export interface TokenCounter {
  count(text: string): number;
  /**
   * Tokens of `text` when they are at most `limit`; past it, counting stops and the rest is estimated from the
   * part counted (`exact: false`). Bounds the work a huge input costs the event loop (5 MiB took about 1.2 s to
   * count whole, holding every other request) to about what `limit` tokens take.
   */
  countUpTo(text: string, limit: number): { tokens: number; exact: boolean };
  /** The start of `text` made of its first `limit` tokens at most (cut between tokens, never inside a character). */
  head(text: string, limit: number): string;
}

/** Slices counted one at a time by `countUpTo` (cut at white space, where cl100k never joins across). */
const SLICE = 16 * 1024;

/**
 * Counts already made, by text: the passages a search returns recur across questions, and an answer's words
 * recur within it, so most counts of a RAG call are found here instead of re-encoded (byte-pair encoding was
 * over half the CPU of a RAG call). Bounded by the characters kept; the oldest entries go first.
 */
const MEMO_MAX_CHARS = 4 * 1024 * 1024;
const MEMO_MAX_TEXT = 16 * 1024;
const memo = new Map<string, number>();
let memoChars = 0;

function remember(text: string, tokens: number): number {
  if (text.length > MEMO_MAX_TEXT) return tokens;
  memo.set(text, tokens);
  memoChars += text.length;
  for (const [old] of memo) {
    if (memoChars <= MEMO_MAX_CHARS) break;
    memo.delete(old);
    memoChars -= old.length;
  }
  return tokens;
}

/** The cl100k counter, once loaded. */
export async function tokenCounter(): Promise<TokenCounter> {
  const enc = await load();
  const count = (text: string) => (text ? (memo.get(text) ?? remember(text, enc.encode(text, [], []).length)) : 0);
  return {
    count,
    countUpTo(text, limit) {
      let tokens = 0;
      for (let at = 0; at < text.length;) {
        let end = Math.min(text.length, at + SLICE);
        if (end < text.length) {
          const ws = text.lastIndexOf(' ', end);
          if (ws > at) end = ws;
        }
        tokens += count(text.slice(at, end));
        at = end;
        if (tokens > limit && at < text.length) return { tokens: Math.ceil((tokens * text.length) / at), exact: false };
      }
      return { tokens, exact: true };
    },
    head(text, limit) {
      const ids = enc.encode(text, [], []);
      for (let n = Math.min(limit, ids.length); n > 0; n--) {
        const start = enc.decode(ids.slice(0, n));
        // A token boundary inside a character decodes to U+FFFD: one token fewer.
        if (text.startsWith(start)) return start;
      }
      return '';
    },
  };
}
