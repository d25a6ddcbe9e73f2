import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Judgments } from './metrics';

/** A BEIR dataset directory: corpus.jsonl, queries.jsonl, qrels/<split>.tsv. */
export interface CorpusDoc {
  _id: string;
  title: string;
  text: string;
}

export interface BeirDataset {
  dir: string;
  corpus: CorpusDoc[];
  queries: Map<string, string>;
}

const jsonl = <T>(file: string): T[] =>
  readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l.trim())
    .map((l) => JSON.parse(l) as T);

export function loadBeir(dir: string): BeirDataset {
  for (const f of ['corpus.jsonl', 'queries.jsonl'])
    if (!existsSync(join(dir, f)))
      throw new Error(`${join(dir, f)} not found: --dataset must be a BEIR dataset directory`);
  const corpus = jsonl<{ _id: string; title?: string; text?: string }>(join(dir, 'corpus.jsonl')).map((d) => ({
    _id: String(d._id),
    title: d.title ?? '',
    text: d.text ?? '',
  }));
  const queries = new Map(
    jsonl<{ _id: string; text: string }>(join(dir, 'queries.jsonl')).map((q) => [String(q._id), q.text] as const),
  );
  return { dir, corpus, queries };
}

/** qrels/<split>.tsv (header `query-id corpus-id score`; CRLF tolerated) → query id → (doc id → grade). */
export function loadQrels(dir: string, split: string): Map<string, Map<string, number>> {
  const file = join(dir, 'qrels', `${split}.tsv`);
  if (!existsSync(file)) throw new Error(`${file} not found`);
  const out = new Map<string, Map<string, number>>();
  const lines = readFileSync(file, 'utf8').split(/\r?\n/);
  for (const [i, line] of lines.entries()) {
    const cols = line.trim().split('\t');
    if (cols.length < 3 || (i === 0 && !/^-?\d+$/.test(cols[2]))) continue; // header, blank lines
    const [q, d, s] = cols;
    let m = out.get(q);
    if (!m) out.set(q, (m = new Map()));
    m.set(d, Number(s));
  }
  return out;
}

/**
 * The text a document is ingested with: BEIR indexes title + body, and our service never indexes a document's title
 * (docs/search.md), so the title leads the body as its own paragraph.
 */
export const documentText = (d: CorpusDoc, titleInText = true): string =>
  titleInText && d.title.trim() ? `${d.title.trim()}\n\n${d.text}` : d.text;

export type { Judgments };
