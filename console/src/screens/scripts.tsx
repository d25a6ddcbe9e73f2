// Scripts and triggers: the context's scripts (newest version of each name), a script's versions; an editor that
// pushes a new version (POST /v1/scripts: a syntax error is refused at the source), a run with JSON input
// (POST /v1/scripts/execute) showing the result or the script's error; trigger rules (declare, list, delete) and
// their failures (GET /v1/trigger-failures).
import { useCallback, useState } from 'preact/hooks';
import type { Answer } from '@svc/client';
import { ApiError, asApiError, unwrap, useClient, useLoad } from '../api';
import { ErrorMessage, shownAtField } from '../components/errors';
import { CheckField, SelectField, TextField } from '../components/fields';
import { PagedTable, type Column } from '../components/paged-table';
import { href, navigate } from '../router';
import type { ScreenProps } from './screen-props';

type Script = Answer<'getScript'>;
type Trigger = Answer<'getTrigger'>;
type Failure = Answer<'listTriggerFailures'>['data'][number];
const split = (s: string) =>
  s
    .split(/[\s,]+/)
    .map((x) => x.trim())
    .filter(Boolean);

export default function Scripts({ params }: ScreenProps) {
  const [name] = params;
  if (name === 'triggers') return <Triggers />;
  if (name) return <ScriptPage name={name} />;
  return <ScriptList />;
}

function Tabs({ at }: { at: 'scripts' | 'triggers' }) {
  return (
    <nav class="tabs" aria-label="Scripts and triggers">
      <a href={href('scripts')} aria-current={at === 'scripts' ? 'page' : undefined}>
        Scripts
      </a>
      <a href={href('scripts', 'triggers')} aria-current={at === 'triggers' ? 'page' : undefined}>
        Trigger rules and failures
      </a>
    </nav>
  );
}

function ScriptList() {
  const client = useClient();
  const load = useCallback(
    (cursor: string | undefined) =>
      unwrap(client.GET('/v1/scripts', { params: { query: { limit: 20, ...(cursor ? { startFrom: cursor } : {}) } } })),
    [client],
  );
  const columns: Column<Script>[] = [
    { label: 'Name', cell: (s) => <a href={href('scripts', s.name)}>{s.name}</a> },
    { label: 'Latest version', cell: (s) => s.version },
    { label: 'Size', cell: (s) => `${s.sourceBytes} bytes` },
    { label: 'Pushed', cell: (s) => s.createdAt },
    { label: 'Description', cell: (s) => s.description ?? '' },
  ];
  return (
    <section>
      <h1>Scripts</h1>
      <Tabs at="scripts" />
      <PagedTable
        caption="Scripts of this context"
        columns={columns}
        load={load}
        rowKey={(s) => s.id}
        empty="No script yet."
      />
      <Editor />
    </section>
  );
}

/**
 * The API says a compile error in prose ("The source does not compile: ..."): shown under the source, where it belongs.
 */
function atSource(e: ApiError): ApiError {
  const message = String(e.body.message ?? '');
  return e.errorCode === 'VALIDATION_ERROR' && /^The source\b/.test(message)
    ? new ApiError(e.status, { ...e.body, message: `source: ${message}` }, e.requestId)
    : e;
}

/** Pushes a new version of `base`'s name (or a new script); navigates to the script's page. */
function Editor({ base, onPushed }: { base?: Script; onPushed?: (s: Script) => void }) {
  const client = useClient();
  const [name, setName] = useState(base?.name ?? '');
  const [source, setSource] = useState(
    base?.source ?? 'export default (input) => ({ hello: input.params.name ?? "world" });\n',
  );
  const [description, setDescription] = useState(base?.description ?? '');
  const [error, setError] = useState<ApiError>();
  return (
    <form
      onSubmit={async (e) => {
        e.preventDefault();
        setError(undefined);
        try {
          const s = await unwrap(
            client.POST('/v1/scripts', { body: { name, source, ...(description ? { description } : {}) } }),
          );
          if (onPushed) onPushed(s as Script);
          else navigate(href('scripts', s.name));
        } catch (err) {
          setError(atSource(asApiError(err)));
        }
      }}
    >
      <h2>{base ? `Edit ${base.name}: push version ${base.version + 1}` : 'New script'}</h2>
      {base ? null : (
        <TextField
          label="Script name"
          path="name"
          value={name}
          onInput={setName}
          error={error}
          required
          hint="Letters, digits, _ and -"
        />
      )}
      <TextField
        label="Source"
        path="source"
        value={source}
        onInput={setSource}
        error={error}
        multiline
        rows={10}
        required
        hint="An ES module whose default export is called with {event, userId, params}"
      />
      <TextField label="Description" path="description" value={description} onInput={setDescription} error={error} />
      {error && !shownAtField(error, ['name', 'source', 'description']) ? <ErrorMessage error={error} /> : null}
      <button type="submit" class="primary">
        {base ? 'Push new version' : 'Create script'}
      </button>
    </form>
  );
}

function ScriptPage({ name }: { name: string }) {
  const client = useClient();
  const [round, setRound] = useState(0);
  const versions = useLoad(
    async (c) => {
      const out: Script[] = [];
      for await (const s of c.paginate('/v1/scripts', { query: { name, limit: 100 } })) out.push(s as Script);
      return out;
    },
    [name, round],
  );
  const [shown, setShown] = useState<number>();
  const [input, setInput] = useState('{}');
  const [version, setVersion] = useState('latest');
  const [run, setRun] = useState<{ result?: unknown; durationMs?: number; error?: ApiError }>();
  const [running, setRunning] = useState(false);
  const latest = versions.data?.[0];
  const current = versions.data?.find((v) => v.version === shown) ?? latest;

  async function execute(e: Event) {
    e.preventDefault();
    setRun(undefined);
    let params: Record<string, unknown>;
    try {
      params = JSON.parse(input || '{}');
    } catch (err) {
      return setRun({
        error: new ApiError(0, { message: `input: not JSON (${(err as Error).message})`, errorCode: 'NOT_SENT' }),
      });
    }
    setRunning(true);
    const { data, error, response } = await client
      .POST('/v1/scripts/execute', { body: { scriptRef: { name, version }, input: params } })
      .catch((err) => ({ data: undefined, error: err, response: undefined }));
    if (data) setRun({ result: data.result, durationMs: data.execution.durationMs });
    else {
      const apiError = response
        ? new ApiError(response.status, error, response.headers.get('x-request-id'))
        : asApiError(error);
      const ex = (apiError.body as { execution?: { durationMs: number } }).execution;
      setRun({ error: apiError, durationMs: ex?.durationMs });
    }
    setRunning(false);
  }

  return (
    <section>
      <h1>Script {name}</h1>
      <Tabs at="scripts" />
      <ErrorMessage error={versions.error} />
      {current ? (
        <>
          <dl class="facts">
            <dt>Version</dt>
            <dd>
              {current.version}
              {current === latest ? ' (latest)' : ''}
            </dd>
            <dt>Id</dt>
            <dd>
              <code>{current.id}</code>
            </dd>
            <dt>Pushed</dt>
            <dd>{current.createdAt}</dd>
            <dt>Size</dt>
            <dd>{current.sourceBytes} bytes</dd>
          </dl>
          <pre aria-label={`Source of version ${current.version}`}>
            {current.source ?? '(the source needs scripts:r)'}
          </pre>
          <ul class="versions" aria-label="Versions">
            {(versions.data ?? []).map((v) => (
              <li>
                <button
                  type="button"
                  class="small"
                  onClick={() => setShown(v.version)}
                  aria-pressed={v === current ? 'true' : 'false'}
                >
                  Show version {v.version}
                </button>{' '}
                {v.createdAt}
              </li>
            ))}
          </ul>
        </>
      ) : null}
      <form onSubmit={execute}>
        <h2>Run</h2>
        <div class="grid2">
          <TextField
            label="Input (JSON)"
            path="input"
            value={input}
            onInput={setInput}
            error={run?.error}
            multiline
            rows={4}
            hint="Passed as input.params"
          />
          <SelectField
            label="Version to run"
            path="scriptRef.version"
            value={version}
            onChange={setVersion}
            error={run?.error}
            options={['latest', ...(versions.data ?? []).map((v) => String(v.version))]}
          />
        </div>
        <button type="submit" class="primary" disabled={running}>
          {running ? 'Running…' : 'Run script'}
        </button>
      </form>
      {run ? (
        <section aria-labelledby="run-h" class="run">
          <h2 id="run-h">{run.error ? 'The run failed' : 'Result'}</h2>
          {run.durationMs !== undefined ? <p>Took {run.durationMs} ms in the service.</p> : null}
          {run.error ? (
            <ErrorMessage
              error={run.error}
              title={run.error.errorCode === 'SCRIPT_ERROR' ? 'The script threw' : undefined}
            />
          ) : (
            <pre aria-label="Result">{JSON.stringify(run.result, null, 2)}</pre>
          )}
        </section>
      ) : null}
      {latest ? <Editor base={latest} onPushed={() => (setShown(undefined), setRound(round + 1))} /> : null}
    </section>
  );
}

function Triggers() {
  const client = useClient();
  const schemas = useLoad(async (c) => {
    const out: Answer<'getSchema'>[] = [];
    for await (const s of c.paginate('/v1/schemas', { query: { limit: 100 } })) out.push(s as Answer<'getSchema'>);
    return out;
  }, []);
  const [round, setRound] = useState(0);
  const [name, setName] = useState('');
  const [schemaId, setSchemaId] = useState('');
  const [events, setEvents] = useState<string[]>(['CREATE']);
  const [script, setScript] = useState('');
  const [scriptVersion, setScriptVersion] = useState('latest');
  const [fields, setFields] = useState('');
  const [actions, setActions] = useState('records:r');
  const [error, setError] = useState<ApiError>();
  const [listError, setListError] = useState<ApiError>();
  const rules = useCallback(
    (cursor: string | undefined) =>
      unwrap(
        client.GET('/v1/triggers', { params: { query: { limit: 20, ...(cursor ? { startFrom: cursor } : {}) } } }),
      ),
    [client, round],
  );
  const failures = useCallback(
    (cursor: string | undefined) =>
      unwrap(
        client.GET('/v1/trigger-failures', {
          params: { query: { limit: 20, ...(cursor ? { startFrom: cursor } : {}) } },
        }),
      ),
    [client, round],
  );
  async function remove(t: Trigger) {
    setListError(undefined);
    try {
      await unwrap(client.DELETE('/v1/triggers/{id}', { params: { path: { id: t.id } } }));
      setRound(round + 1);
    } catch (err) {
      setListError(asApiError(err));
    }
  }
  const ruleColumns: Column<Trigger>[] = [
    { label: 'Name', cell: (t) => t.name },
    { label: 'Type', cell: (t) => t.typeName },
    { label: 'Events', cell: (t) => t.events.join(', ') },
    { label: 'Script', cell: (t) => `${t.scriptRef.name}@${t.scriptRef.version}` },
    { label: 'Fields', cell: (t) => t.fields.join(', ') },
    { label: 'Grant', cell: (t) => t.grant.allowedActions.join(', ') },
    { label: 'Enabled', cell: (t) => (t.enabled ? 'yes' : 'no') },
    {
      label: 'Delete',
      cell: (t) => (
        <button type="button" class="danger small" onClick={() => remove(t)} aria-label={`Delete trigger ${t.name}`}>
          Delete
        </button>
      ),
    },
  ];
  const failureColumns: Column<Failure>[] = [
    { label: 'When', cell: (f) => f.lastFailedAt },
    { label: 'Rule', cell: (f) => <code>{f.ruleId}</code> },
    { label: 'Script', cell: (f) => `${f.scriptRef.name}@${f.scriptRef.version}` },
    { label: 'Record', cell: (f) => <code>{f.recordId}</code> },
    { label: 'Event', cell: (f) => f.event },
    { label: 'Reason', cell: (f) => `${f.reason}: ${f.message}` },
    { label: 'Attempts', cell: (f) => f.attempts },
  ];
  const PATHS = ['name', 'schemaId', 'events', 'scriptRef', 'fields', 'grant'];
  return (
    <section>
      <h1>Trigger rules</h1>
      <Tabs at="triggers" />
      <ErrorMessage error={listError ?? schemas.error} />
      <PagedTable
        caption="Trigger rules of this context"
        columns={ruleColumns}
        load={rules}
        rowKey={(t) => t.id}
        empty="No trigger rule yet."
      />
      <form
        onSubmit={async (e) => {
          e.preventDefault();
          setError(undefined);
          try {
            await unwrap(
              client.POST('/v1/triggers', {
                body: {
                  name,
                  schemaId,
                  events: events as Array<'CREATE'>,
                  scriptRef: { name: script, version: scriptVersion },
                  fields: split(fields),
                  grant: { allowedActions: split(actions) },
                },
              }),
            );
            setRound(round + 1);
            setName('');
          } catch (err) {
            setError(asApiError(err));
          }
        }}
      >
        <h2>Declare a trigger rule</h2>
        <div class="grid2">
          <TextField label="Rule name" path="name" value={name} onInput={setName} error={error} required />
          <SelectField
            label="Record type"
            path="schemaId"
            value={schemaId}
            onChange={setSchemaId}
            error={error}
            options={[
              { value: '', label: 'Choose a type' },
              ...(schemas.data ?? []).map((s) => ({ value: s.id, label: s.typeName })),
            ]}
          />
          <TextField
            label="Script name"
            path="scriptRef.name"
            value={script}
            onInput={setScript}
            error={error}
            required
          />
          <TextField
            label="Script version"
            path="scriptRef.version"
            value={scriptVersion}
            onInput={setScriptVersion}
            error={error}
            hint="A number or latest"
          />
          <TextField
            label="Fields passed to the script"
            path="fields"
            value={fields}
            onInput={setFields}
            error={error}
            hint="Comma separated: inline, filterable or lookup fields, not sensitive ones"
          />
          <TextField
            label="Grant: allowed actions"
            path="grant.allowedActions"
            value={actions}
            onInput={setActions}
            error={error}
            hint="What the script may do when the rule fires"
          />
        </div>
        <fieldset>
          <legend>Events</legend>
          <div class="flags">
            {['CREATE', 'UPDATE', 'DELETE'].map((ev) => (
              <CheckField
                label={ev}
                checked={events.includes(ev)}
                onChange={(on) => setEvents(on ? [...events, ev] : events.filter((x) => x !== ev))}
              />
            ))}
          </div>
        </fieldset>
        {error && !shownAtField(error, PATHS) ? <ErrorMessage error={error} /> : null}
        <button type="submit" class="primary">
          Declare rule
        </button>
      </form>
      <h2>Failures</h2>
      <div class="actions">
        <button type="button" onClick={() => setRound(round + 1)}>
          Refresh
        </button>
      </div>
      <PagedTable
        caption="Trigger failures"
        columns={failureColumns}
        load={failures}
        rowKey={(f) => f.id}
        empty="No failure."
      />
    </section>
  );
}
