import { Tiktoken } from 'js-tiktoken/lite';

/**
 * Token counts (decisions §8: cl100k, by a maintained tokenizer library, js-tiktoken):
 * the 32,000-token document-ask limit, `inputTokens` / `outputTokens` and prices.
 * The encoder's tables take a second or two to load: loaded once, on first use or
 * at start (`warmTokenizer`).
 */
let encoder: Promise<Tiktoken> | undefined;

function load(): Promise<Tiktoken> {
  encoder ??= import('js-tiktoken/ranks/cl100k_base').then((m) => new Tiktoken((m as { default: ConstructorParameters<typeof Tiktoken>[0] }).default));
  return encoder;
}

export const warmTokenizer = (): Promise<void> => load().then(() => undefined);

export interface TokenCounter {
  count(text: string): number;
}

/** The cl100k counter, once loaded. */
export async function tokenCounter(): Promise<TokenCounter> {
  const enc = await load();
  return { count: (text: string) => (text ? enc.encode(text, [], []).length : 0) };
}
