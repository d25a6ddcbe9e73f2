// Records: pick a type, browse its records as a table with the schema's columns (cursor paged), narrow them with a
// lookup (exact value, prefix or range, ascending or descending), open one to see its payload, indexStatus and every
// version (and its tombstone once deleted), create, edit (PUT or PATCH with expectedVersion: a 409 is shown as a
// conflict) and delete.
import type { ComponentChildren } from 'preact';
import { useCallback, useEffect, useMemo, useRef, useState } from 'preact/hooks';
import type { Answer } from '@svc/client';
import { asApiError, unwrap, useClient, useLoad, type ApiError } from '../api';
import { ErrorMessage, shownAtField } from '../components/errors';
import { SelectField, TextField } from '../components/fields';
import { PagedTable, type Column } from '../components/paged-table';
import { useChanges, useThrottledTick } from '../live';
import {
  draftOf,
  patchOf,
  payloadOf,
  PayloadFields,
  valueOf,
  type PayloadDraft,
  type SchemaField,
} from '../components/payload-fields';
import { href, navigate } from '../router';
import type { ScreenProps } from './screen-props';

type Schema = Answer<'getSchema'>;
type RecordView = Answer<'getRecord'>;
type Lookup = NonNullable<Schema['lookupFields']>[number];

export default function Records({ params }: ScreenProps) {
  const [typeName, id, action] = params;
  if (!typeName) return <TypePicker />;
  return (
    <WithSchema typeName={typeName}>
      {(schema) =>
        id === 'new' ? (
          <RecordForm schema={schema} />
        ) : id && action === 'edit' ? (
          <EditRecord schema={schema} id={id} />
        ) : id ? (
          <RecordPage schema={schema} id={id} />
        ) : (
          <RecordList schema={schema} />
        )
      }
    </WithSchema>
  );
}

/** The record types of the context (schemas whose surfaces include `record`). */
function useRecordSchemas() {
  return useLoad(async (c) => {
    const out: Schema[] = [];
    for await (const s of c.paginate('/v1/schemas', { query: { surface: 'record', limit: 100 } }))
      out.push(s as Schema);
    return out;
  }, []);
}

function TypePicker() {
  const schemas = useRecordSchemas();
  return (
    <section>
      <h1>Records</h1>
      <ErrorMessage error={schemas.error} />
      {schemas.data && !schemas.data.length ? (
        <p>
          No record type yet: <a href={href('schemas', 'new')}>create a schema</a> with the record surface.
        </p>
      ) : null}
      <ul class="types">
        {(schemas.data ?? []).map((s) => (
          <li>
            <a href={href('records', s.typeName)}>{s.displayName}</a> <code>{s.typeName}</code>
          </li>
        ))}
      </ul>
    </section>
  );
}

function WithSchema({ typeName, children }: { typeName: string; children: (s: Schema) => ComponentChildren }) {
  const schemas = useRecordSchemas();
  if (schemas.error) return <ErrorMessage error={schemas.error} />;
  if (!schemas.data) return <p aria-busy="true">Loading…</p>;
  const schema = schemas.data.find((s) => s.typeName === typeName);
  if (!schema)
    return (
      <section>
        <h1>Records</h1>
        <p role="alert">There is no record type “{typeName}” in this context.</p>
      </section>
    );
  return <>{children(schema)}</>;
}

const lookupName = (l: Lookup) =>
  typeof l === 'string' ? l : 'fieldNames' in l ? l.fieldNames.join(',') : l.fieldName;
const cellText = (v: unknown) =>
  v === undefined || v === null ? '' : typeof v === 'object' ? JSON.stringify(v) : String(v);

interface FieldSearch {
  query: string;
  /** The typed value of each filterable field ('' = any). */
  values: Record<string, string>;
}

/** Equality filters from the form: numbers and booleans as such, the rest as text. */
function filtersOf(fields: SchemaField[], values: Record<string, string>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const f of fields) {
    const v = values[f.fieldId];
    if (v === undefined || v === '') continue;
    out[f.fieldId] = f.fieldType === 'boolean' ? v === 'true' : valueOf(f, v);
  }
  return out;
}

interface Filter {
  field: string;
  mode: 'value' | 'prefix' | 'range';
  value: string;
  to: string;
  order: 'asc' | 'desc';
}

function RecordList({ schema }: { schema: Schema }) {
  const client = useClient();
  const fields = schema.fields ?? [];
  const lookups = (schema.lookupFields ?? []).map(lookupName);
  const [draft, setDraft] = useState<Filter>({
    field: lookups[0] ?? '',
    mode: 'value',
    value: '',
    to: '',
    order: 'asc',
  });
  const [filter, setFilter] = useState<Filter>();
  const [error, setError] = useState<ApiError>();
  const filterable = fields.filter((f) => f.filterable && !f.sensitive);
  const [searchDraft, setSearchDraft] = useState<FieldSearch>({ query: '', values: {} });
  const [search, setSearch] = useState<FieldSearch>();
  const [searchError, setSearchError] = useState<ApiError>();

  const load = useCallback(
    async (startFrom?: string) => {
      const cursor = startFrom ? { startFrom } : {};
      if (search) {
        // The search API pages by offset: the table's cursor is the next offset.
        const offset = Number(startFrom ?? 0);
        try {
          const found = await unwrap(
            client.POST('/v1/search', {
              body: {
                query: search.query,
                typeName: schema.typeName,
                contentTypes: ['records'],
                filters: filtersOf(filterable, search.values),
                limit: 20,
                offset,
              },
            }),
          );
          setSearchError(undefined);
          const ids = found.results.map((r) => r.documentId);
          const got = ids.length ? await unwrap(client.POST('/v1/records/batch-get', { body: { ids } })) : { data: [] };
          const byId = new Map((got.data as RecordView[]).map((r) => [r.id, r]));
          return {
            data: ids.map((id) => byId.get(id)).filter((r): r is RecordView => !!r),
            nextCursor: ids.length === 20 && offset + 20 < found.totalResults ? String(offset + 20) : null,
          };
        } catch (e) {
          setSearchError(asApiError(e));
          return { data: [], nextCursor: null };
        }
      }
      if (!filter)
        return unwrap(
          client.GET('/v1/records', {
            params: { query: { type: schema.typeName, includePayload: 'true', limit: 20, ...cursor } },
          }),
        );
      const q =
        filter.mode === 'value'
          ? { value: filter.value }
          : filter.mode === 'prefix'
            ? { prefix: filter.value }
            : { ...(filter.value ? { from: filter.value } : {}), ...(filter.to ? { to: filter.to } : {}) };
      try {
        const page = await unwrap(
          client.GET('/v1/records/lookup', {
            params: {
              query: {
                type: schema.typeName,
                field: filter.field,
                order: filter.order,
                includePayload: true,
                limit: 20,
                ...q,
                ...cursor,
              },
            },
          }),
        );
        setError(undefined);
        return page;
      } catch (e) {
        // A refused filter is shown at the filter's fields; the table shows nothing.
        setError(asApiError(e));
        return { data: [], nextCursor: null };
      }
    },
    [client, schema.typeName, filter, search],
  );

  // Live: a change to a record of this type reloads the page shown (at most twice a second).
  const [refresh, bump] = useThrottledTick(500);
  useChanges(bump, { types: [schema.typeName], entities: ['records'] });

  const columns: Column<RecordView>[] = [
    {
      label: 'Record',
      cell: (r) => <a href={href('records', schema.typeName, r.id)}>{r.externalId ?? r.id.slice(0, 8)}</a>,
    },
    ...fields.slice(0, 5).map((f) => ({
      label: f.fieldId,
      cell: (r: RecordView) => cellText((r.payload as Record<string, unknown> | undefined)?.[f.fieldId]),
    })),
    {
      label: 'Index status',
      cell: (r) => <span class={`status status-${r.indexStatus ?? 'none'}`}>{r.indexStatus ?? 'not indexed'}</span>,
    },
    { label: 'Version', cell: (r) => r.version },
    { label: 'Updated', cell: (r) => r.updatedAt },
  ];

  return (
    <section>
      <p class="crumbs">
        <a href={href('records')}>Records</a>
      </p>
      <h1>{schema.displayName} records</h1>
      <p class="actions">
        <a class="button primary" href={href('records', schema.typeName, 'new')}>
          New record
        </a>
        <a class="button" href={href('schemas', schema.id)}>
          Schema
        </a>
      </p>
      {lookups.length ? (
        <form
          class="filter"
          aria-label="Filter by a lookup"
          onSubmit={(e) => {
            e.preventDefault();
            setSearch(undefined);
            setFilter({ ...draft });
          }}
        >
          <fieldset>
            <legend>Filter by a lookup</legend>
            <div class="field-row">
              <SelectField
                label="Lookup field"
                path="field"
                value={draft.field}
                onChange={(v) => setDraft({ ...draft, field: v })}
                options={lookups}
                error={error}
              />
              <SelectField
                label="Match"
                value={draft.mode}
                onChange={(v) => setDraft({ ...draft, mode: v as Filter['mode'] })}
                options={[
                  { value: 'value', label: 'equals' },
                  { value: 'prefix', label: 'starts with' },
                  { value: 'range', label: 'between' },
                ]}
              />
              <TextField
                label={draft.mode === 'range' ? 'From' : 'Value'}
                path={draft.mode === 'range' ? 'from' : draft.mode}
                value={draft.value}
                onInput={(v) => setDraft({ ...draft, value: v })}
                error={error}
              />
              {draft.mode === 'range' ? (
                <TextField
                  label="To"
                  path="to"
                  value={draft.to}
                  onInput={(v) => setDraft({ ...draft, to: v })}
                  error={error}
                />
              ) : null}
              <SelectField
                label="Order"
                path="order"
                value={draft.order}
                onChange={(v) => setDraft({ ...draft, order: v as Filter['order'] })}
                options={[
                  { value: 'asc', label: 'ascending' },
                  { value: 'desc', label: 'descending' },
                ]}
              />
            </div>
            {shownAtField(error, ['field', 'value', 'prefix', 'from', 'to', 'order']) ? null : (
              <ErrorMessage error={error} />
            )}
            <p class="actions">
              <button type="submit" class="primary">
                Apply filter
              </button>
              {filter ? (
                <button type="button" onClick={() => (setFilter(undefined), setError(undefined))}>
                  Clear filter
                </button>
              ) : null}
            </p>
          </fieldset>
        </form>
      ) : (
        <p class="hint">This type has no lookup fields to filter by (add one to its schema).</p>
      )}
      {filterable.length ? (
        <form
          class="filter"
          aria-label="Search and filter by fields"
          onSubmit={(e) => {
            e.preventDefault();
            setFilter(undefined);
            setError(undefined);
            setSearch({ query: searchDraft.query, values: { ...searchDraft.values } });
          }}
          noValidate
        >
          <fieldset>
            <legend>Search and filter by fields</legend>
            <p class="hint">
              Finds indexed records of this type by their text (POST /v1/search), keeping those whose filterable fields
              have the values given.
            </p>
            <div class="field-row">
              <TextField
                label="Search text"
                path="query"
                value={searchDraft.query}
                onInput={(v) => setSearchDraft({ ...searchDraft, query: v })}
                error={searchError}
                required
              />
              {filterable.map((f) =>
                f.fieldType === 'enum' || f.fieldType === 'boolean' ? (
                  <SelectField
                    label={`${f.fieldId} is`}
                    path={`filters.${f.fieldId}`}
                    value={searchDraft.values[f.fieldId] ?? ''}
                    onChange={(v) =>
                      setSearchDraft({ ...searchDraft, values: { ...searchDraft.values, [f.fieldId]: v } })
                    }
                    error={searchError}
                    options={[
                      { value: '', label: '(any)' },
                      ...(f.fieldType === 'boolean' ? ['true', 'false'] : (f.enumValues ?? []).map(String)),
                    ]}
                  />
                ) : (
                  <TextField
                    label={`${f.fieldId} is`}
                    path={`filters.${f.fieldId}`}
                    value={searchDraft.values[f.fieldId] ?? ''}
                    onInput={(v) =>
                      setSearchDraft({ ...searchDraft, values: { ...searchDraft.values, [f.fieldId]: v } })
                    }
                    error={searchError}
                  />
                ),
              )}
            </div>
            {shownAtField(searchError, ['query', ...filterable.map((f) => `filters.${f.fieldId}`)]) ? null : (
              <ErrorMessage error={searchError} />
            )}
            <p class="actions">
              <button type="submit" class="primary">
                Search
              </button>
              {search ? (
                <button type="button" onClick={() => (setSearch(undefined), setSearchError(undefined))}>
                  Clear search
                </button>
              ) : null}
            </p>
          </fieldset>
        </form>
      ) : null}
      <PagedTable<RecordView>
        caption={
          search
            ? `${schema.displayName} records found for “${search.query}”${Object.entries(search.values)
                .filter(([, v]) => v !== '')
                .map(([k, v]) => `, ${k} = ${v}`)
                .join('')}`
            : filter
              ? `${schema.displayName} records where ${filter.field} ` +
                `${filter.mode === 'value' ? '=' : filter.mode === 'prefix' ? 'starts with' : 'between'} ` +
                `${filter.value}${filter.mode === 'range' ? ` and ${filter.to}` : ''} ` +
                `(${filter.order === 'asc' ? 'ascending' : 'descending'})`
              : `${schema.displayName} records`
        }
        load={load}
        refresh={refresh}
        rowKey={(r) => r.id}
        columns={columns}
        empty={filter ? 'No record matches.' : 'No record of this type yet.'}
      />
    </section>
  );
}

function RecordPage({ schema, id }: { schema: Schema; id: string }) {
  const client = useClient();
  // The record, or once deleted its tombstone.
  const record = useLoad(
    async (c) => {
      try {
        return { live: await unwrap(c.GET('/v1/records/{id}', { params: { path: { id } } })) };
      } catch (e) {
        const err = asApiError(e);
        if (err.status !== 404) throw err;
        return { tombstone: await unwrap(c.GET('/v1/records/{id}/tombstone', { params: { path: { id } } })) };
      }
    },
    [id],
  );
  const versions = useLoad(
    async (c) => {
      const out: Answer<'getRecordVersions'>['data'] = [];
      for await (const v of c.paginate('/v1/records/{id}/versions', { path: { id }, query: { limit: 100 } }))
        out.push(v);
      return out;
    },
    [id, record.data],
  );
  // Live: a change to this record (a new version, its index status, its deletion) reloads it and its history.
  useChanges((c) => c.entityId === id && record.reload(), { types: [schema.typeName], entities: ['records'] });
  const [shown, setShown] = useState<number>();
  const [confirming, setConfirming] = useState(false);
  const [error, setError] = useState<ApiError>();
  const r = record.data?.live;
  const t = record.data?.tombstone;

  async function remove() {
    if (!r) return;
    try {
      await unwrap(
        client.DELETE('/v1/records/{id}', { params: { path: { id }, query: { expectedVersion: r.version } } }),
      );
      setConfirming(false);
      setError(undefined);
      record.reload();
    } catch (e) {
      setError(asApiError(e));
    }
  }

  const version = versions.data?.find((v) => v.version === shown);
  return (
    <section>
      <p class="crumbs">
        <a href={href('records')}>Records</a> › <a href={href('records', schema.typeName)}>{schema.displayName}</a>
      </p>
      <h1>{t ? 'Deleted record' : `Record ${r?.externalId ?? id}`}</h1>
      {record.error && record.error.status === 404 ? (
        <p role="alert">No record {id} (never written, or out of this credential's reach).</p>
      ) : (
        <ErrorMessage error={record.error} />
      )}
      {r ? (
        <>
          <dl class="facts">
            <dt>Id</dt>
            <dd>
              <code>{r.id}</code>
            </dd>
            <dt>Version</dt>
            <dd>{r.version}</dd>
            <dt>Index status</dt>
            <dd>
              <span class={`status status-${r.indexStatus ?? 'none'}`}>
                {r.indexStatus ?? 'not indexed (store only)'}
              </span>
            </dd>
            <dt>External id</dt>
            <dd>{r.externalId ?? 'none'}</dd>
            <dt>Folder</dt>
            <dd>{r.folderId ?? 'none'}</dd>
            <dt>Updated</dt>
            <dd>{r.updatedAt}</dd>
          </dl>
          <h2>Payload</h2>
          <pre aria-label="Payload">{JSON.stringify(r.payload, null, 2)}</pre>
          <p class="actions">
            <a class="button primary" href={href('records', schema.typeName, id, 'edit')}>
              Edit record
            </a>
            <button type="button" onClick={record.reload}>
              Refresh
            </button>
            {confirming ? (
              <>
                <button type="button" class="danger" onClick={remove}>
                  Delete version {r.version} for good
                </button>
                <button type="button" onClick={() => setConfirming(false)}>
                  Keep it
                </button>
              </>
            ) : (
              <button type="button" class="danger" onClick={() => setConfirming(true)}>
                Delete record
              </button>
            )}
          </p>
          <ErrorMessage error={error} />
        </>
      ) : null}
      {t ? (
        <div class="notice" role="status">
          <p>
            This record was deleted at {t.deletedAt} (its last version was {t.lastVersion}). Its history stays.
          </p>
        </div>
      ) : null}
      <h2>Versions</h2>
      <ErrorMessage error={versions.error} />
      <table>
        <caption>Version history</caption>
        <thead>
          <tr>
            <th scope="col">Version</th>
            <th scope="col">Change</th>
            <th scope="col">When</th>
            <th scope="col">Payload</th>
          </tr>
        </thead>
        <tbody>
          {(versions.data ?? []).map((v) => (
            <tr>
              <td>{v.version}</td>
              <td>{v.eventType}</td>
              <td>{v.recordedAt}</td>
              <td>
                {v.state ? (
                  <button
                    type="button"
                    class="small"
                    aria-pressed={shown === v.version ? 'true' : 'false'}
                    onClick={() => setShown(shown === v.version ? undefined : v.version)}
                  >
                    Show version {v.version}
                  </button>
                ) : (
                  '(none)'
                )}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      {version?.state ? (
        <>
          <h2>Version {version.version}</h2>
          <pre aria-label={`Payload of version ${version.version}`}>
            {JSON.stringify((version.state as { payload?: unknown }).payload, null, 2)}
          </pre>
        </>
      ) : null}
    </section>
  );
}

function EditRecord({ schema, id }: { schema: Schema; id: string }) {
  const record = useLoad((c) => unwrap(c.GET('/v1/records/{id}', { params: { path: { id } } })), [id]);
  if (record.error) return <ErrorMessage error={record.error} />;
  if (!record.data) return <p aria-busy="true">Loading…</p>;
  return <RecordForm schema={schema} existing={record.data} />;
}

function RecordForm({ schema, existing }: { schema: Schema; existing?: RecordView }) {
  const client = useClient();
  const fields: SchemaField[] = schema.fields ?? [];
  // The version the draft was made from: saving is checked against it (expectedVersion), and a PATCH sends what
  // changed from it.
  const [base, setBase] = useState(existing);
  const before = (base?.payload ?? {}) as Record<string, unknown>;
  const [draft, setDraft] = useState<PayloadDraft>(() => draftOf(fields, before));
  const edited = useRef(false);
  const [externalId, setExternalId] = useState(existing?.externalId ?? '');
  const [method, setMethod] = useState<'PATCH' | 'PUT'>('PATCH');
  const [error, setError] = useState<ApiError>();
  const [busy, setBusy] = useState(false);
  const paths = useMemo(() => ['externalId', 'payload', ...fields.map((f) => `payload.${f.fieldId}`)], [fields]);
  // A newer version shown while the form is open starts the draft again from it, unless the person has edited it:
  // their edit stays, based on the version they edited, and saving it over the newer one is refused as a conflict
  // (resetting dropped the edit silently, and the save then overwrote the newer version with the old values).
  useEffect(() => {
    if (base?.version === existing?.version || edited.current) return;
    setBase(existing);
    setDraft(draftOf(fields, (existing?.payload ?? {}) as Record<string, unknown>));
  }, [existing?.version]);

  async function submit(e: Event) {
    e.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      let saved: RecordView;
      if (!existing) {
        saved = await unwrap(
          client.POST('/v1/records', {
            body: {
              typeName: schema.typeName,
              payload: payloadOf(fields, draft),
              ...(externalId.trim() ? { externalId: externalId.trim() } : {}),
            },
          }),
        );
      } else if (method === 'PUT') {
        saved = await unwrap(
          client.PUT('/v1/records/{id}', {
            params: { path: { id: existing.id } },
            body: { typeName: schema.typeName, payload: payloadOf(fields, draft), expectedVersion: base!.version },
          }),
        );
      } else {
        saved = await unwrap(
          client.PATCH('/v1/records/{id}', {
            params: { path: { id: existing.id } },
            body: { payload: patchOf(fields, draft, before), expectedVersion: base!.version },
          }),
        );
      }
      navigate(href('records', schema.typeName, saved.id));
    } catch (x) {
      setError(asApiError(x));
    } finally {
      setBusy(false);
    }
  }

  const conflict = error?.status === 409 && error.errorCode === 'VERSION_CONFLICT';
  return (
    <section>
      <p class="crumbs">
        <a href={href('records')}>Records</a> › <a href={href('records', schema.typeName)}>{schema.displayName}</a>
      </p>
      <h1>{existing ? `Edit record ${existing.externalId ?? existing.id}` : `New ${schema.displayName} record`}</h1>
      <form onSubmit={submit} noValidate>
        {existing ? (
          <p>
            Editing version {base!.version}. Saving sends <code>expectedVersion: {base!.version}</code>: if someone
            changed the record since, the service refuses with a conflict and nothing is overwritten.
          </p>
        ) : (
          <TextField
            label="External id (optional)"
            path="externalId"
            value={externalId}
            onInput={setExternalId}
            error={error}
            hint="Your own id for it; unique in the context."
          />
        )}
        <fieldset>
          <legend>Payload</legend>
          <PayloadFields
            fields={fields}
            draft={draft}
            onChange={(d) => {
              edited.current = true;
              setDraft(d);
            }}
            error={error}
          />
        </fieldset>
        {existing ? (
          <SelectField
            label="Save as"
            value={method}
            onChange={(v) => setMethod(v as 'PATCH' | 'PUT')}
            options={[
              { value: 'PATCH', label: 'PATCH: change the fields edited here' },
              { value: 'PUT', label: 'PUT: replace the whole payload' },
            ]}
          />
        ) : null}
        {conflict ? (
          <div class="error" role="alert">
            <strong>Conflict: this record changed since you opened it</strong>
            <p class="error-message">{String((error.body as { message?: string }).message ?? '')}</p>
            <p class="error-meta">
              409 {error.errorCode}
              {error.requestId ? ` · request ${error.requestId}` : ''}
            </p>
            <p>
              <a href={href('records', schema.typeName, existing!.id)}>Open the current version</a> and edit that.
            </p>
          </div>
        ) : shownAtField(error, paths) ? null : (
          <ErrorMessage error={error} />
        )}
        <p class="actions">
          <button type="submit" class="primary" disabled={busy}>
            {existing ? 'Save record' : 'Create record'}
          </button>
          <a
            class="button"
            href={existing ? href('records', schema.typeName, existing.id) : href('records', schema.typeName)}
          >
            Cancel
          </a>
        </p>
      </form>
    </section>
  );
}
