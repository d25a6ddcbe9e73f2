/**
 * The COMPLEX text-mode syntax, parsed once here and translated by each text
 * index adapter:
 *
 *   word            a term (stemmed like the indexed text)
 *   "two words"     a phrase (contiguous, in order)
 *   -word, -"a b"   exclusion (also `NOT word`)
 *   a AND b         both (also plain juxtaposition: `a b`)
 *   a OR b          either; AND binds tighter than OR
 *   ( … )           grouping
 *
 * Parsing never fails: an unmatched `)` is ignored, a missing `)` or closing
 * quote is implied at the end, and AND / OR / NOT in lower case are ordinary words.
 */
export type QueryNode =
  | { kind: 'term'; text: string }
  | { kind: 'phrase'; text: string }
  | { kind: 'and'; items: QueryNode[] }
  | { kind: 'or'; items: QueryNode[] }
  | { kind: 'not'; item: QueryNode };

type Tok = { t: 'word' | 'phrase'; v: string } | { t: '(' | ')' | 'AND' | 'OR' | 'NOT' | '-' };

function tokenize(s: string): Tok[] {
  const out: Tok[] = [];
  let i = 0;
  while (i < s.length) {
    const c = s[i];
    if (/\s/.test(c)) {
      i++;
    } else if (c === '(' || c === ')') {
      out.push({ t: c });
      i++;
    } else if (c === '"') {
      const end = s.indexOf('"', i + 1);
      const v = s.slice(i + 1, end < 0 ? s.length : end);
      if (v.trim()) out.push({ t: 'phrase', v: v.trim() });
      i = end < 0 ? s.length : end + 1;
    } else if (c === '-' && i + 1 < s.length && !/\s/.test(s[i + 1]) && (i === 0 || /[\s(]/.test(s[i - 1]))) {
      out.push({ t: '-' });
      i++;
    } else {
      let j = i;
      while (j < s.length && !/[\s()"]/.test(s[j])) j++;
      const w = s.slice(i, j);
      if (w === 'AND' || w === 'OR' || w === 'NOT') out.push({ t: w });
      else out.push({ t: 'word', v: w });
      i = j;
    }
  }
  return out;
}

export function parseComplexQuery(s: string): QueryNode | null {
  const toks = tokenize(s);
  let p = 0;
  const peek = () => toks[p];
  const flat = (kind: 'and' | 'or', items: QueryNode[]): QueryNode | null =>
    items.length === 0 ? null : items.length === 1 ? items[0] : { kind, items };

  function orExpr(): QueryNode | null {
    const items: QueryNode[] = [];
    for (;;) {
      const a = andExpr();
      if (a) items.push(a);
      if (peek()?.t === 'OR') {
        p++;
        continue;
      }
      return flat('or', items);
    }
  }
  function andExpr(): QueryNode | null {
    const items: QueryNode[] = [];
    for (;;) {
      const t = peek();
      if (!t || t.t === 'OR' || t.t === ')') return flat('and', items);
      if (t.t === 'AND') {
        p++;
        continue;
      }
      const u = unary();
      if (u) items.push(u);
    }
  }
  function unary(): QueryNode | null {
    const t = peek();
    if (t.t === '-' || t.t === 'NOT') {
      p++;
      if (!peek()) return null;
      const inner = unary();
      return inner ? { kind: 'not', item: inner } : null;
    }
    return primary();
  }
  function primary(): QueryNode | null {
    const t = toks[p++];
    if (!t) return null;
    if (t.t === '(') {
      const e = orExpr();
      if (peek()?.t === ')') p++;
      return e;
    }
    if (t.t === 'word') return { kind: 'term', text: t.v };
    if (t.t === 'phrase') return { kind: 'phrase', text: t.v };
    return null; // a stray ')' or operator
  }
  let root: QueryNode | null = null;
  const parts: QueryNode[] = [];
  while (p < toks.length) {
    const e = orExpr();
    if (e) parts.push(e);
    if (peek()?.t === ')') p++; // unmatched ')'
  }
  root = flat('and', parts);
  return root;
}

/** Words in non-excluded terms and phrases: what keyword relevance scores. */
export function positiveText(n: QueryNode | null): string[] {
  if (!n) return [];
  switch (n.kind) {
    case 'term':
    case 'phrase':
      return [n.text];
    case 'not':
      return [];
    default:
      return n.items.flatMap(positiveText);
  }
}
