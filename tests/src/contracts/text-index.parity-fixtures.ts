import { chunkText, type IndexedItem, type ItemFilter, parseFilters, type TextMode } from '@svc/domain';
import { passages } from '../relevance/corpus';

/**
 * What the parity suites (memory vs SQL, Elasticsearch vs SQL) index and ask: the relevance
 * corpus as items of two passages each with varied filter columns, every filter kind and
 * every text mode.
 */
export const parityPassages = passages();

export const parityItem = (
  tenantId: string,
  contextId: string,
  i: number,
  over: Partial<IndexedItem> = {},
): IndexedItem => {
  const ps = parityPassages;
  return {
    itemId: ps[i].id,
    tenantId,
    contextId,
    sourceType: i % 3 ? 'record' : 'document',
    typeName: i % 3 ? 'place' : null,
    folderId: `f${i % 4}`,
    userId: i % 5 === 0 ? 'u1' : null,
    scopes: i % 2 ? ['org:a'] : [],
    attrs: { rank: i, group: `g${i % 3}`, tags: [`t${i % 2}`, `t${i % 5}`] },
    createdAt: new Date(Date.UTC(2026, 0, 1 + (i % 28))).toISOString(),
    metadata: {},
    // two chunks per passage text, so items hold several passages
    passages: chunkText(`${ps[i].text} ${ps[(i + 7) % ps.length].text}`, { maxChars: 200 }),
    ...over,
  };
};

export const PARITY_FILTERS: Array<Partial<ItemFilter>> = [
  {},
  { sourceTypes: ['record'], typeName: 'place' },
  { folderIds: ['f1', 'f2'], scopesAll: ['org:a'] },
  { userIds: ['u1'] },
  {
    scopesAny: ['org:a', 'org:b'],
    createdAfter: '2026-01-05T00:00:00.000Z',
    createdBefore: '2026-01-20T00:00:00.000Z',
  },
  { clauses: parseFilters({ rank: { $gte: 40, $lt: 150 }, group: { $in: ['g0', 'g2'] } }) },
  { clauses: parseFilters({ tags: 't3', group: { $ne: 'g1' }, rank: { $nin: [3, 8] } }) },
];

export const PARITY_MODES: Array<{ textMode: TextMode; slop: number; q?: (q: string) => string }> = [
  { textMode: 'OR', slop: 0 },
  { textMode: 'AND', slop: 0 },
  { textMode: 'PHRASE', slop: 0 },
  { textMode: 'PHRASE', slop: 2 },
  {
    textMode: 'COMPLEX',
    slop: 0,
    q: (q) => {
      const w = q.split(/\s+/);
      return w.length > 2 ? `(${w[0]} OR ${w[1]}) -${w[2]} "${w.slice(0, 2).join(' ')}"` : `${w[0]} OR "${q}"`;
    },
  },
  { textMode: 'COMPLEX', slop: 0, q: (q) => `-${q.split(/\s+/)[0]}` },
];
