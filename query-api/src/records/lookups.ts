import { z } from 'zod';
import {
  blindIndex,
  checkNumberLiteral,
  checkNumberValue,
  identifier,
  invalid,
  type Page,
  type Paginator,
  type Principal,
  type SchemaDefinition,
} from '@svc/contracts';
import {
  dateMillis,
  encodeValue,
  lookupsOf,
  ownerKeyOf,
  sortBoundKey,
  type Sql,
  DOCUMENT_TABLES,
  RECORD_TABLES,
} from '@svc/domain';
import { schemaForType } from '../schemas/reads';

/**
 * Record lookups: exactly one mode per call (exact, range or prefix), over the
 * lookup index the records projection maintains. Results page by keyset over
 * the ordering columns, so a page is never short while matches remain.
 */
const scalar = z.union([z.string(), z.number(), z.boolean()]);
export const lookupParams = z.object({
  type: identifier,
  field: z.string().min(1).max(200),
  value: scalar.optional(),
  values: z.union([scalar, z.array(scalar).min(1).max(3)]).optional(),
  from: scalar.optional(),
  to: scalar.optional(),
  prefix: z.string().min(1).max(256).optional(),
  order: z.enum(['asc', 'desc']).optional(),
  sortFrom: z.union([z.string(), z.number()]).optional(),
  sortTo: z.union([z.string(), z.number()]).optional(),
  sortBy: z.string().optional(), // ignored silently, as the spec says
  includePayload: z.union([z.boolean(), z.enum(['true', 'false'])]).optional(),
  startFrom: z.string().optional(),
});
export type LookupParams = z.infer<typeof lookupParams>;

type FieldDef = NonNullable<SchemaDefinition['fields']>[number];

export interface LookupPlan {
  field: string;
  where: string[];
  args: unknown[];
  /** ORDER BY columns with their directions; the cursor holds their values. */
  order: Array<{ col: string; dir: 'ASC' | 'DESC' }>;
}

/** Validates a lookup against the schema and builds its plan; every 400 of the Lookups section is raised here. */
export function planLookup(
  def: SchemaDefinition,
  p: LookupParams,
  via: 'GET' | 'POST',
  blind: (field: string, value: unknown) => string,
): LookupPlan {
  const byId = new Map((def.fields ?? []).map((f) => [f.fieldId, f]));
  const lookups = lookupsOf(def);
  const decl = lookups.find((l) => (l.kind === 'single' ? l.fieldName : l.fieldNames.join(',')) === p.field);
  if (!decl) {
    if (lookups.some((l) => l.kind === 'composite' && l.fieldNames.includes(p.field)))
      throw invalid(
        `'${p.field}' is part of a composite lookup: query the composite field (${lookups
          .filter((l) => l.kind === 'composite')
          .map((l) => (l as { fieldNames: string[] }).fieldNames.join(','))
          .join(' or ')}) with a leading run of values`,
      );
    throw invalid(`'${p.field}' is not a lookup field of type '${def.typeName}'`);
  }
  const exact = p.value !== undefined || p.values !== undefined;
  const range = p.from !== undefined || p.to !== undefined;
  const prefix = p.prefix !== undefined;
  const modes = [exact, range, prefix].filter(Boolean).length;
  if (modes !== 1) throw invalid('Give exactly one lookup mode: value/values (exact), from+to (range) or prefix');
  if (p.value !== undefined && p.values !== undefined) throw invalid('Give value or values, not both');
  const dir = p.order === 'desc' ? 'DESC' : 'ASC';
  const names = decl.kind === 'single' ? [decl.fieldName] : decl.fieldNames;
  const fields = names.map((n) => byId.get(n));
  const sensitive = fields.some((f) => f?.sensitive);
  const where: string[] = [];
  const args: unknown[] = [];
  const arg = (v: unknown) => {
    args.push(v);
    return `$${args.length + 4}`; // $1..$4 are tenant, context, type, field
  };
  const keyOf = (f: FieldDef | undefined, raw: unknown, name: string) => {
    const v = coerce(f, raw);
    const k = f?.sensitive ? 'h' + blind(name, v) : encodeValue(f, v);
    if (k === null) throw invalid(`'${raw}' is not a valid value for ${name}`);
    return k;
  };
  // Pin the unused key columns of a single-field lookup, so the index (k1, k2, k3, sort_key, record_id) also gives the
  // order.
  if (decl.kind === 'single') where.push(`l.k2 = ''`, `l.k3 = ''`);
  let order: LookupPlan['order'];
  if (exact) {
    const vals = p.values !== undefined ? (Array.isArray(p.values) ? p.values : [p.values]) : [p.value!];
    if (vals.length > names.length) throw invalid(`${p.field} takes at most ${names.length} values`);
    if (sensitive && via === 'GET' && decl.kind === 'single')
      throw invalid(`'${p.field}' is sensitive: use POST /v1/records/lookup with the value in the body`);
    vals.forEach((v, i) => where.push(`l.k${i + 1} = ${arg(keyOf(fields[i], v, names[i]))}`));
    order = [
      ...names.slice(vals.length).map((_, i) => ({ col: `k${vals.length + i + 1}`, dir: 'ASC' as const })),
      { col: 'sort_key', dir },
      { col: 'record_id', dir },
    ];
    const windowed = p.sortFrom !== undefined || p.sortTo !== undefined;
    if (windowed) {
      if (decl.kind === 'composite' && vals.length !== names.length)
        throw invalid('sortFrom / sortTo on a composite lookup need the full tuple of values');
      where.push(`l.sort_key <> ''`);
      if (p.sortFrom !== undefined) where.push(`l.sort_key >= ${arg(boundKey(def, p.sortFrom))}`);
      if (p.sortTo !== undefined) where.push(`l.sort_key <= ${arg(boundKey(def, p.sortTo))}`);
    }
  } else {
    if (decl.kind === 'composite') throw invalid('Range and prefix lookups are for single-field lookups only');
    if (sensitive) throw invalid(`Range and prefix lookups are not allowed on sensitive field '${p.field}'`);
    if (p.sortFrom !== undefined || p.sortTo !== undefined) throw invalid('sortFrom / sortTo apply to exact lookups');
    const f = fields[0];
    if (range) {
      if (p.from === undefined || p.to === undefined) throw invalid('A range lookup needs both from and to');
      const lo = rangeBound(f, p.from, names[0], 'from');
      const hi = rangeBound(f, p.to, names[0], 'to');
      if (lo.rank !== null && hi.rank !== null && compareRank(lo.rank, hi.rank) > 0)
        throw invalid(`An inverted range: from (${shown(p.from)}) is above to (${shown(p.to)})`);
      where.push(`l.k1 >= ${arg(lo.key)}`, `l.k1 <= ${arg(hi.key)}`);
    } else {
      if (f && f.fieldType !== 'string')
        throw invalid(`prefix lookups need a string field; '${p.field}' is ${f.fieldType}`);
      const lo = 's' + p.prefix;
      const a = arg(lo);
      where.push(`l.k1 >= ${a}`, `starts_with(l.k1, ${a})`);
    }
    order = [
      { col: 'k1', dir },
      { col: 'sort_key', dir },
      { col: 'record_id', dir },
    ];
  }
  return { field: p.field, where, args, order };
}

/** Query-string values arrive as text: read them in the field's own type. */
export function coerce(f: FieldDef | undefined, v: unknown): unknown {
  if (typeof v !== 'string') return v;
  if (
    (f?.fieldType === 'number' || (f?.fieldType === 'date' && /^-?\d+$/.test(v))) &&
    v.trim() !== '' &&
    !Number.isNaN(Number(v))
  )
    return Number(v);
  if (f?.fieldType === 'boolean' && (v === 'true' || v === 'false')) return v === 'true';
  return v;
}

/** A bound as quoted in a message (bounded: a bound may be long text). */
const shown = (v: unknown) => (String(v).length > 64 ? `${String(v).slice(0, 64)}…` : String(v));

/** A JSON number literal (query text has no other way to spell a number). */
const NUMBER_TEXT = /^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?$/;

type Rank = number | Buffer;
const compareRank = (a: Rank, b: Rank) =>
  typeof a === 'number' && typeof b === 'number'
    ? Math.sign(a - b)
    : typeof a !== 'number' && typeof b !== 'number'
      ? Buffer.compare(a, b)
      : 0;

/**
 * A range bound read in the field's type: a number field takes a number (the
 * spec's number rules apply), a date an ISO-8601 date or epoch milliseconds, a
 * boolean true / false, a string field text. `rank` orders the two bounds the
 * way the index does (null: not comparable, e.g. an undeclared field's type).
 */
function rangeBound(
  f: FieldDef | undefined,
  raw: string | number | boolean,
  name: string,
  which: 'from' | 'to',
): { key: string; rank: Rank | null } {
  const bad = (what: string) =>
    invalid(`${which}: '${shown(raw)}' is not ${what} (range lookup on ${f?.fieldType} field ${name})`);
  switch (f?.fieldType) {
    case 'number': {
      let n: number;
      if (typeof raw === 'number') n = raw;
      else if (typeof raw === 'string' && NUMBER_TEXT.test(raw)) {
        const why = checkNumberLiteral(raw);
        if (why) throw invalid(`${which}: ${why}`);
        n = Number(raw);
      } else throw bad('a number');
      const why = checkNumberValue(n);
      if (why) throw invalid(`${which}: ${why}`);
      return { key: encodeValue(f, n)!, rank: n };
    }
    case 'date': {
      const v = coerce(f, raw);
      const ms = typeof v === 'boolean' ? null : dateMillis(v);
      if (ms === null || (typeof v === 'number' && !Number.isSafeInteger(v)))
        throw bad('an ISO-8601 date or epoch milliseconds');
      return { key: encodeValue(f, ms)!, rank: ms };
    }
    case 'boolean': {
      const v = coerce(f, raw);
      if (typeof v !== 'boolean') throw bad('true or false');
      return { key: encodeValue(f, v)!, rank: v ? 1 : 0 };
    }
    case 'string':
    case 'reference':
      if (typeof raw !== 'string') throw bad('a string');
      return { key: encodeValue(f, raw)!, rank: Buffer.from(raw, 'utf8') };
    default: {
      // enum, array, object, or a bare schema's field: keyed as given; ordered only against a bound of the same kind.
      const v = coerce(f, raw);
      const key = encodeValue(f, v);
      if (key === null) throw invalid(`'${shown(raw)}' is not a valid value for ${name}`);
      return { key, rank: typeof v === 'number' ? v : typeof v === 'string' ? Buffer.from(v, 'utf8') : null };
    }
  }
}

function boundKey(def: SchemaDefinition, raw: string | number): string {
  const k = sortBoundKey(def, raw);
  if (k === null) throw invalid(`sort bound '${raw}' is not a value of the sort field`);
  return k;
}

/** Lexicographic "after the cursor" over columns with mixed directions. */
function afterClause(order: LookupPlan['order'], values: string[], arg: (v: unknown) => string): string {
  const ors: string[] = [];
  for (let i = 0; i < order.length; i++) {
    const eqs = order.slice(0, i).map((o, j) => `l.${o.col} = ${arg(values[j])}`);
    eqs.push(`l.${order[i].col} ${order[i].dir === 'ASC' ? '>' : '<'} ${arg(values[i])}`);
    ors.push(`(${eqs.join(' AND ')})`);
  }
  return `(${ors.join(' OR ')})`;
}

/** A lookup index and the table of the items it indexes (which carries their owner, for a credential's data scope). */
export interface LookupIndex {
  table: string;
  items: string;
  /** The item id column of both tables. */
  idColumn: string;
}
export const RECORD_LOOKUPS: LookupIndex = {
  table: RECORD_TABLES.lookups,
  items: RECORD_TABLES.records,
  idColumn: 'record_id',
};
export const DOCUMENT_LOOKUPS: LookupIndex = {
  table: DOCUMENT_TABLES.lookups,
  items: DOCUMENT_TABLES.documents,
  idColumn: 'document_id',
};

/** The hits of a lookup plan over `index` in index order: each item's id and its cursor key. */
export async function runIndexLookup(
  sql: Sql,
  index: LookupIndex,
  p: Principal,
  typeName: string,
  plan: LookupPlan,
  after: string[] | undefined,
  limit: number,
): Promise<Array<{ id: string; cursor: string[] }>> {
  // Plans name the records' id column; the documents' index orders by its own.
  const order = plan.order.map((o) => (o.col === 'record_id' ? { ...o, col: index.idColumn } : o));
  const args: unknown[] = [p.tenantId, p.contextId, typeName, plan.field, ...plan.args];
  const arg = (v: unknown) => {
    args.push(v);
    return `$${args.length}`;
  };
  const where = ['l.tenant_id = $1', 'l.context_id = $2', 'l.type_name = $3', 'l.field = $4', ...plan.where];
  const ds = p.dataScope;
  const userId = ds?.userId ?? p.userId;
  if (userId) where.push(`i.user_id = ${arg(userId)}`);
  if (ds?.scopes?.length) where.push(`i.scopes ?| ${arg(ds.scopes)}::text[]`);
  if (after) where.push(afterClause(order, after, arg));
  // The items join is needed only to apply a credential's data scope.
  const join = userId || ds?.scopes?.length ? `JOIN ${index.items} i ON i.${index.idColumn} = l.${index.idColumn}` : '';
  const { rows } = await sql.query<Record<string, string>>(
    `SELECT ${order.map((o) => `l.${o.col}`).join(', ')} FROM ${index.table} l ${join}
      WHERE ${where.join(' AND ')}
      ORDER BY ${order.map((o) => `l.${o.col} ${o.dir}`).join(', ')} LIMIT ${arg(limit)}`,
    args,
  );
  return rows.map((r) => ({ id: r[index.idColumn], cursor: order.map((o) => r[o.col]) }));
}

export interface LookupRow {
  record_id: string;
  cursor: string[];
}

/** The records' lookup (rm_record_lookups). */
export async function runLookup(
  sql: Sql,
  p: Principal,
  typeName: string,
  plan: LookupPlan,
  after: string[] | undefined,
  limit: number,
): Promise<LookupRow[]> {
  return (await runIndexLookup(sql, RECORD_LOOKUPS, p, typeName, plan, after, limit)).map((h) => ({
    record_id: h.id,
    cursor: h.cursor,
  }));
}

/** `includePayload` as given in a query string (text) or a body (a boolean). */
export const wantsPayload = (q: LookupParams) => q.includePayload === true || q.includePayload === 'true';

/**
 * One page of a schema-field lookup (GET or POST; sensitive values by blind index)
 * over `index`: the hits in index order, read by `byIds` and shown by `view`.
 * `name` scopes the cursors.
 */
export async function lookupPage<R extends { id: string }, T>(
  o: { sql: Sql; pages: Paginator; blindKey: Buffer },
  target: {
    name: string;
    index: LookupIndex;
    byIds(ids: string[]): Promise<R[]>;
    view(row: R, full: boolean, p: Principal): Promise<T>;
  },
  q: LookupParams & { limit: number },
  p: Principal,
  via: 'GET' | 'POST',
): Promise<Page<T>> {
  const { startFrom, limit, ...bound } = q;
  const scope = `${target.name}:${p.tenantId}:${p.contextId}:${via}`;
  const params = { ...bound, limit };
  const def = await schemaForType(
    o.sql,
    p.tenantId!,
    p.contextId!,
    q.type,
    ownerKeyOf({ userId: p.dataScope?.userId ?? p.userId ?? undefined, scopes: p.dataScope?.scopes }),
  );
  if (!def) throw invalid(`No schema with typeName '${q.type}' in this context`);
  const plan = planLookup(def, q, via, (field, value) =>
    blindIndex(o.blindKey, [p.tenantId!, p.contextId!, q.type, field], value),
  );
  const after = o.pages.start<string[]>(scope, params, startFrom);
  const hits = await runIndexLookup(o.sql, target.index, p, q.type, plan, after, limit + 1);
  const page = o.pages.page(
    scope,
    params,
    hits,
    limit,
    (h) => h.cursor,
    (h) => h.id,
  );
  const byId = new Map((await target.byIds(page.data)).map((r) => [r.id, r]));
  const full = wantsPayload(q);
  const data = await Promise.all(
    page.data
      .map((id) => byId.get(id))
      .filter((r): r is R => !!r)
      .map((r) => target.view(r, full, p)),
  );
  return { data, nextCursor: page.nextCursor };
}
