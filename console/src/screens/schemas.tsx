// Schemas: the list (cursor paged), one schema read with its fields, lookups, index mode, surfaces and versions, and
// a form that creates one or edits it (PUT with expectedVersion). The API's errors are shown at the control they
// name (typeName, fields.2.fieldType, lookupFields...), anything else above the buttons.
import { useCallback, useState } from 'preact/hooks';
import type { Answer, Body } from '@svc/client';
import { asApiError, unwrap, useClient, useLoad, type ApiError } from '../api';
import { ErrorMessage, issueAt, shownAtField } from '../components/errors';
import { CheckField, SelectField, TextField } from '../components/fields';
import { PagedTable } from '../components/paged-table';
import { href, navigate } from '../router';
import type { ScreenProps } from './screen-props';

type Schema = Answer<'getSchema'>;
type SchemaBody = Body<'createSchema'>;
type FieldDef = NonNullable<SchemaBody['fields']>[number];
type FieldType = FieldDef['fieldType'];

export const FIELD_TYPES: FieldType[] = ['string', 'number', 'boolean', 'date', 'enum', 'array', 'object', 'reference'];
const INDEX_MODES = ['', 'HYBRID', 'SEMANTIC', 'TEXT', 'NONE'] as const;
const SURFACES = ['record', 'document', 'user', 'entity'] as const;

export default function Schemas({ params }: ScreenProps) {
  const [first, second] = params;
  if (first === 'new') return <SchemaForm />;
  if (first && second === 'edit') return <EditSchema id={first} />;
  if (first) return <SchemaView id={first} />;
  return <SchemaList />;
}

function SchemaList() {
  const client = useClient();
  const load = useCallback(
    async (startFrom?: string) => {
      return unwrap(
        client.GET('/v1/schemas', { params: { query: { limit: 20, ...(startFrom ? { startFrom } : {}) } } }),
      );
    },
    [client],
  );
  return (
    <section>
      <h1>Schemas</h1>
      <p>
        <a class="button primary" href={href('schemas', 'new')}>
          New schema
        </a>
      </p>
      <PagedTable<Schema>
        caption="Schemas of this context"
        load={load}
        rowKey={(s) => s.id}
        empty="No schema yet: create one."
        columns={[
          { label: 'Type', cell: (s) => <a href={href('schemas', s.id)}>{s.typeName}</a> },
          { label: 'Name', cell: (s) => s.displayName },
          { label: 'Fields', cell: (s) => (s.fields ?? []).length },
          { label: 'Surfaces', cell: (s) => s.allowedSurfaces.join(', ') },
          { label: 'Index mode', cell: (s) => s.indexMode ?? 'default' },
          { label: 'Version', cell: (s) => String((s as { schemaVersion?: number }).schemaVersion ?? '') },
        ]}
      />
    </section>
  );
}

function SchemaView({ id }: { id: string }) {
  const schema = useLoad((c) => unwrap(c.GET('/v1/schemas/{id}', { params: { path: { id } } })), [id]);
  const versions = useLoad((c) => unwrap(c.GET('/v1/schemas/{id}/versions', { params: { path: { id } } })), [id]);
  const s = schema.data;
  return (
    <section>
      <p class="crumbs">
        <a href={href('schemas')}>Schemas</a>
      </p>
      <h1>{s ? `Schema ${s.typeName}` : 'Schema'}</h1>
      <ErrorMessage error={schema.error} />
      {s ? (
        <>
          <dl class="facts">
            <dt>Name</dt>
            <dd>{s.displayName}</dd>
            <dt>Id</dt>
            <dd>
              <code>{s.id}</code>
            </dd>
            <dt>Version</dt>
            <dd>{String((s as { schemaVersion?: number }).schemaVersion ?? '')}</dd>
            <dt>Surfaces</dt>
            <dd>{s.allowedSurfaces.join(', ')}</dd>
            <dt>Index mode</dt>
            <dd>{s.indexMode ?? 'default (HYBRID with a searchable field, else NONE)'}</dd>
            <dt>Lookups</dt>
            <dd>{(s.lookupFields ?? []).map(lookupLabel).join(', ') || 'none'}</dd>
            {s.sortBy ? (
              <>
                <dt>Sorted by</dt>
                <dd>{s.sortBy}</dd>
              </>
            ) : null}
          </dl>
          <p class="actions">
            <a class="button primary" href={href('schemas', s.id, 'edit')}>
              Edit schema
            </a>
            {s.allowedSurfaces.includes('record') ? (
              <a class="button" href={href('records', s.typeName)}>
                Records of this type
              </a>
            ) : null}
          </p>
          <table>
            <caption>Fields</caption>
            <thead>
              <tr>
                <th scope="col">Field</th>
                <th scope="col">Type</th>
                <th scope="col">Flags</th>
                <th scope="col">Details</th>
              </tr>
            </thead>
            <tbody>
              {(s.fields ?? []).map((f) => (
                <tr>
                  <td>{f.fieldId}</td>
                  <td>{f.fieldType}</td>
                  <td>{flagsOf(f).join(', ')}</td>
                  <td>
                    {f.fieldType === 'enum'
                      ? (f.enumValues ?? []).join(', ')
                      : f.fieldType === 'reference'
                        ? `→ ${f.targetTypeName ?? ''}`
                        : (f.description ?? '')}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </>
      ) : null}
      <h2>Versions</h2>
      <ErrorMessage error={versions.error} />
      <ol class="versions">
        {(versions.data?.data ?? []).map((v) => (
          <li>
            Version {v.version}: {v.eventType} at {v.recordedAt}
          </li>
        ))}
      </ol>
    </section>
  );
}

const flagsOf = (f: FieldDef) =>
  (['required', 'searchable', 'filterable', 'sensitive', 'inline'] as const).filter((k) => f[k]);
const lookupLabel = (l: NonNullable<SchemaBody['lookupFields']>[number]) =>
  typeof l === 'string'
    ? l
    : 'fieldNames' in l
      ? l.fieldNames.join('+')
      : `${l.fieldName}${l.unique ? ' (unique)' : ''}${l.rangeEnabled ? ' (range)' : ''}`;

function EditSchema({ id }: { id: string }) {
  const schema = useLoad((c) => unwrap(c.GET('/v1/schemas/{id}', { params: { path: { id } } })), [id]);
  if (schema.error) return <ErrorMessage error={schema.error} />;
  if (!schema.data) return <p aria-busy="true">Loading…</p>;
  return <SchemaForm existing={schema.data} />;
}

interface FieldRow {
  fieldId: string;
  fieldType: FieldType;
  required: boolean;
  searchable: boolean;
  filterable: boolean;
  sensitive: boolean;
  enumValues: string;
  targetTypeName: string;
  /** Kept as they were (validation rules, render hints...): the form edits what it shows and leaves the rest. */
  rest: Partial<FieldDef>;
}
interface LookupRow {
  fieldName: string;
  unique: boolean;
  rangeEnabled: boolean;
  /** A composite lookup (fieldNames), kept as it is. */
  composite?: string[];
}

const rowOf = (f: FieldDef): FieldRow => {
  const { fieldId, fieldType, required, searchable, filterable, sensitive, enumValues, targetTypeName, ...rest } = f;
  return {
    fieldId,
    fieldType,
    required: !!required,
    searchable: !!searchable,
    filterable: !!filterable,
    sensitive: !!sensitive,
    enumValues: (enumValues ?? []).join(', '),
    targetTypeName: targetTypeName ?? '',
    rest,
  };
};
const emptyRow = (): FieldRow => ({
  fieldId: '',
  fieldType: 'string',
  required: false,
  searchable: false,
  filterable: false,
  sensitive: false,
  enumValues: '',
  targetTypeName: '',
  rest: {},
});
const lookupOf = (l: NonNullable<SchemaBody['lookupFields']>[number]): LookupRow =>
  typeof l === 'string'
    ? { fieldName: l, unique: false, rangeEnabled: false }
    : 'fieldNames' in l
      ? { fieldName: '', unique: false, rangeEnabled: false, composite: l.fieldNames }
      : { fieldName: l.fieldName, unique: !!l.unique, rangeEnabled: !!l.rangeEnabled };

/** An enum value as typed: numbers and booleans as such, the rest as text. */
const enumValue = (s: string): string | number | boolean =>
  s === 'true' ? true : s === 'false' ? false : s !== '' && !Number.isNaN(Number(s)) ? Number(s) : s;

function fieldOf(r: FieldRow): FieldDef {
  const f: FieldDef = { ...r.rest, fieldId: r.fieldId.trim(), fieldType: r.fieldType };
  if (r.required) f.required = true;
  if (r.searchable) f.searchable = true;
  if (r.filterable) f.filterable = true;
  if (r.sensitive) f.sensitive = true;
  if (r.fieldType === 'enum')
    f.enumValues = r.enumValues
      .split(',')
      .map((v) => v.trim())
      .filter(Boolean)
      .map(enumValue);
  else delete f.enumValues;
  if (r.fieldType === 'reference') f.targetTypeName = r.targetTypeName.trim() || undefined;
  else delete f.targetTypeName;
  return f;
}

function SchemaForm({ existing }: { existing?: Schema }) {
  const client = useClient();
  const [typeName, setTypeName] = useState(existing?.typeName ?? '');
  const [displayName, setDisplayName] = useState(existing?.displayName ?? '');
  const [description, setDescription] = useState(existing?.description ?? '');
  const [indexMode, setIndexMode] = useState<string>(existing?.indexMode ?? '');
  const [surfaces, setSurfaces] = useState<string[]>(existing?.allowedSurfaces ?? ['record']);
  const [sortBy, setSortBy] = useState(existing?.sortBy ?? '');
  const [fields, setFields] = useState<FieldRow[]>(existing ? (existing.fields ?? []).map(rowOf) : [emptyRow()]);
  const [lookups, setLookups] = useState<LookupRow[]>((existing?.lookupFields ?? []).map(lookupOf));
  const [error, setError] = useState<ApiError>();
  const [busy, setBusy] = useState(false);

  const setField = (i: number, patch: Partial<FieldRow>) =>
    setFields(fields.map((f, j) => (j === i ? { ...f, ...patch } : f)));
  const setLookup = (i: number, patch: Partial<LookupRow>) =>
    setLookups(lookups.map((l, j) => (j === i ? { ...l, ...patch } : l)));

  async function submit(e: Event) {
    e.preventDefault();
    setBusy(true);
    setError(undefined);
    const body: SchemaBody = {
      typeName: typeName.trim(),
      displayName,
      allowedSurfaces: surfaces as SchemaBody['allowedSurfaces'],
      fields: fields.map(fieldOf),
      lookupFields: lookups.map((l) =>
        l.composite
          ? { fieldNames: l.composite }
          : l.unique || l.rangeEnabled
            ? {
                fieldName: l.fieldName.trim(),
                ...(l.unique ? { unique: true } : {}),
                ...(l.rangeEnabled ? { rangeEnabled: true } : {}),
              }
            : l.fieldName.trim(),
      ),
      ...(description ? { description } : {}),
      ...(indexMode ? { indexMode: indexMode as SchemaBody['indexMode'] } : {}),
      ...(sortBy ? { sortBy } : {}),
    };
    try {
      const saved = existing
        ? await unwrap(
            client.PUT('/v1/schemas/{id}', {
              params: { path: { id: existing.id } },
              body: {
                ...kept(existing),
                ...body,
                expectedVersion: (existing as { schemaVersion?: number }).schemaVersion,
              },
            }),
          )
        : await unwrap(client.POST('/v1/schemas', { body }));
      navigate(href('schemas', saved.id));
    } catch (x) {
      setError(asApiError(x));
    } finally {
      setBusy(false);
    }
  }

  const controls = [
    'typeName',
    'displayName',
    'description',
    'indexMode',
    'allowedSurfaces',
    'sortBy',
    'fields',
    'lookupFields',
  ];
  return (
    <section>
      <p class="crumbs">
        <a href={href('schemas')}>Schemas</a>
      </p>
      <h1>{existing ? `Edit schema ${existing.typeName}` : 'New schema'}</h1>
      <form onSubmit={submit} class="schema-form" noValidate>
        <div class="grid2">
          <TextField
            label="Type name"
            path="typeName"
            value={typeName}
            onInput={setTypeName}
            error={error}
            required
            disabled={!!existing}
            hint="Letters, digits, _ and -; the name records are written under."
          />
          <TextField
            label="Display name"
            path="displayName"
            value={displayName}
            onInput={setDisplayName}
            error={error}
            required
          />
        </div>
        <TextField label="Description" path="description" value={description} onInput={setDescription} error={error} />
        <div class="grid2">
          <SelectField
            label="Index mode"
            path="indexMode"
            value={indexMode}
            onChange={setIndexMode}
            error={error}
            options={INDEX_MODES.map((m) => ({ value: m, label: m || 'Default (HYBRID with a searchable field)' }))}
          />
          <TextField
            label="Sort records by (set once)"
            path="sortBy"
            value={sortBy}
            onInput={setSortBy}
            error={error}
            disabled={!!existing}
            hint="A field id; lookups answer in this order (default: created)."
          />
        </div>
        <fieldset>
          <legend>Surfaces</legend>
          {SURFACES.map((s) => (
            <CheckField
              label={s}
              checked={surfaces.includes(s)}
              onChange={(on) => setSurfaces(on ? [...surfaces, s] : surfaces.filter((x) => x !== s))}
              name={`surface-${s}`}
            />
          ))}
          {issueAt(error, 'allowedSurfaces') ? (
            <p class="field-error" role="alert">
              {issueAt(error, 'allowedSurfaces')}
            </p>
          ) : null}
        </fieldset>
        <fieldset>
          <legend>Fields</legend>
          {fields.map((f, i) => (
            <div class="field-row" role="group" aria-label={`Field ${i + 1}`}>
              <TextField
                label={`Field ${i + 1} id`}
                path={`fields.${i}.fieldId`}
                value={f.fieldId}
                onInput={(v) => setField(i, { fieldId: v })}
                error={error}
              />
              <SelectField
                label={`Field ${i + 1} type`}
                path={`fields.${i}.fieldType`}
                value={f.fieldType}
                onChange={(v) => setField(i, { fieldType: v as FieldType })}
                error={error}
                options={FIELD_TYPES}
              />
              {f.fieldType === 'enum' ? (
                <TextField
                  label={`Field ${i + 1} values`}
                  path={`fields.${i}.enumValues`}
                  value={f.enumValues}
                  onInput={(v) => setField(i, { enumValues: v })}
                  error={error}
                  hint="Comma-separated"
                />
              ) : null}
              {f.fieldType === 'reference' ? (
                <TextField
                  label={`Field ${i + 1} target type`}
                  path={`fields.${i}.targetTypeName`}
                  value={f.targetTypeName}
                  onInput={(v) => setField(i, { targetTypeName: v })}
                  error={error}
                />
              ) : null}
              <div class="flags">
                <CheckField
                  label="required"
                  checked={f.required}
                  onChange={(v) => setField(i, { required: v })}
                  name={`fields.${i}.required`}
                />
                <CheckField
                  label="searchable"
                  checked={f.searchable}
                  onChange={(v) => setField(i, { searchable: v })}
                  name={`fields.${i}.searchable`}
                />
                <CheckField
                  label="filterable"
                  checked={f.filterable}
                  onChange={(v) => setField(i, { filterable: v })}
                  name={`fields.${i}.filterable`}
                />
                <CheckField
                  label="sensitive"
                  checked={f.sensitive}
                  onChange={(v) => setField(i, { sensitive: v })}
                  name={`fields.${i}.sensitive`}
                />
              </div>
              {issueAt(error, `fields.${i}`) &&
              !issueAt(error, `fields.${i}.fieldId`) &&
              !issueAt(error, `fields.${i}.fieldType`) ? (
                <p class="field-error" role="alert">
                  {issueAt(error, `fields.${i}`)}
                </p>
              ) : null}
              <button type="button" class="small" onClick={() => setFields(fields.filter((_, j) => j !== i))}>
                Remove field {i + 1}
              </button>
            </div>
          ))}
          <button type="button" onClick={() => setFields([...fields, emptyRow()])}>
            Add a field
          </button>
        </fieldset>
        <fieldset>
          <legend>Lookups</legend>
          {lookups.map((l, i) =>
            l.composite ? (
              <p>
                Composite lookup {l.composite.join(' + ')} (kept as is){' '}
                <button type="button" class="small" onClick={() => setLookups(lookups.filter((_, j) => j !== i))}>
                  Remove lookup {i + 1}
                </button>
              </p>
            ) : (
              <div class="field-row" role="group" aria-label={`Lookup ${i + 1}`}>
                <TextField
                  label={`Lookup ${i + 1} field`}
                  path={`lookupFields.${i}`}
                  value={l.fieldName}
                  onInput={(v) => setLookup(i, { fieldName: v })}
                  error={error}
                />
                <div class="flags">
                  <CheckField
                    label="unique"
                    checked={l.unique}
                    onChange={(v) => setLookup(i, { unique: v })}
                    name={`lookupFields.${i}.unique`}
                  />
                  <CheckField
                    label="range"
                    checked={l.rangeEnabled}
                    onChange={(v) => setLookup(i, { rangeEnabled: v })}
                    name={`lookupFields.${i}.rangeEnabled`}
                  />
                </div>
                <button type="button" class="small" onClick={() => setLookups(lookups.filter((_, j) => j !== i))}>
                  Remove lookup {i + 1}
                </button>
              </div>
            ),
          )}
          {issueAt(error, 'lookupFields') && !lookups.some((_, i) => issueAt(error, `lookupFields.${i}`)) ? (
            <p class="field-error" role="alert">
              {issueAt(error, 'lookupFields')}
            </p>
          ) : null}
          <button
            type="button"
            onClick={() => setLookups([...lookups, { fieldName: '', unique: false, rangeEnabled: false }])}
          >
            Add a lookup
          </button>
        </fieldset>
        {shownAtField(error, controls) ? null : <ErrorMessage error={error} />}
        <p class="actions">
          <button type="submit" class="primary" disabled={busy}>
            {existing ? 'Save schema' : 'Create schema'}
          </button>
          <a class="button" href={existing ? href('schemas', existing.id) : href('schemas')}>
            Cancel
          </a>
        </p>
      </form>
    </section>
  );
}

/** What a PUT must carry over that the form does not edit (render hints, capabilities, scopes...). */
function kept(s: Schema): Partial<Body<'updateSchema'>> {
  const { renderHints, capabilities, storageProfile, active, userId, scopes, basedOn } = s as Schema &
    Record<string, never>;
  return Object.fromEntries(
    Object.entries({ renderHints, capabilities, storageProfile, active, userId, scopes, basedOn }).filter(
      ([, v]) => v !== undefined && v !== null,
    ),
  );
}
