import type { LoadResult } from './load';

export type Verdict = 'PASS' | 'MISS' | 'base' | 'info' | 'n/a';

export interface Row {
  id: string;
  section: string;
  name: string;
  result?: LoadResult;
  target?: string;
  /** e.g. "0.42× R1" */
  ratio?: { value: number; vs: string };
  verdict: Verdict;
  note?: string;
}

const num = (v: number | undefined, digits = 0) =>
  v === undefined || Number.isNaN(v)
    ? '—'
    : v.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });

export function formatTable(rows: Row[]): string {
  const head = ['id', 'name', 'ops/s', 'p50 ms', 'p99 ms', 'target', 'ratio vs raw', 'result'];
  const body: string[][] = [];
  const sections: Array<[number, string]> = [];
  let last = '';
  for (const r of rows) {
    if (r.section !== last) {
      sections.push([body.length, r.section]);
      last = r.section;
    }
    body.push([
      r.id,
      r.name,
      r.result ? num(r.result.opsPerSec) : (r.note ?? '—'),
      r.result ? num(r.result.p50, 1) : '—',
      r.result ? num(r.result.p99, 1) : '—',
      r.target ?? '—',
      r.ratio ? `${r.ratio.value.toFixed(2)}× ${r.ratio.vs}` : '—',
      r.verdict === 'base' ? 'base' : r.verdict === 'info' ? 'report' : r.verdict,
    ]);
  }
  const widths = head.map((h, i) => Math.max(h.length, ...body.map((b) => b[i].length)));
  const right = new Set([2, 3, 4]);
  const line = (cells: string[]) =>
    cells.map((c, i) => (right.has(i) ? c.padStart(widths[i]) : c.padEnd(widths[i]))).join('  ');
  const out = [line(head), widths.map((w) => '-'.repeat(w)).join('  ')];
  body.forEach((b, i) => {
    const s = sections.find(([at]) => at === i);
    if (s) out.push(`# ${s[1]}`);
    out.push(line(b));
  });
  return out.join('\n');
}
