// The search playground: one query sent as TEXT, SEMANTIC and HYBRID at once (three POST /v1/search), the three
// answers side by side with their scores, highlighted snippets and the time each took (the service's searchTimeMs
// and the round trip the browser measured). Filters, type, folder and content types narrow all three alike.
import { useRef, useState } from 'preact/hooks';
import type { Answer, Body } from '@svc/client';
import { ApiError, asApiError, unwrap, useClient } from '../api';
import { ErrorMessage, fieldIssues, shownAtField } from '../components/errors';
import { CheckField, TextField } from '../components/fields';
import { Snippet } from '../components/snippet';
import { useTitles } from '../components/titles';
import { useChanges } from '../live';
import type { ScreenProps } from './screen-props';

type SearchAnswer = Answer<'searchContent'>;
const MODES = ['TEXT', 'SEMANTIC', 'HYBRID'] as const;
type Mode = (typeof MODES)[number];
interface Leg {
  answer?: SearchAnswer;
  error?: ApiError;
  roundTripMs: number;
}

/** The form's fields that name a path of the search body (an error about them is shown at them). */
const PATHS = ['query', 'filters', 'typeName', 'folderId', 'rootFolderId', 'limit', 'contentTypes'];

export default function Search({ query }: ScreenProps) {
  const client = useClient();
  const [q, setQ] = useState(query.get('q') ?? '');
  const [typeName, setTypeName] = useState('');
  const [folderId, setFolderId] = useState('');
  const [filters, setFilters] = useState('');
  const [limit, setLimit] = useState('10');
  const [docs, setDocs] = useState(true);
  const [records, setRecords] = useState(true);
  const [legs, setLegs] = useState<Partial<Record<Mode, Leg>>>();
  const [formError, setFormError] = useState<ApiError>();
  const [busy, setBusy] = useState(false);
  const [live, setLive] = useState(false);
  const lastBody = useRef<Body<'searchContent'>>();
  // Live: the shown results are searched again whenever a record or document of the context changes.
  const changes = useChanges(() => lastBody.current && void searchAll(lastBody.current), {
    enabled: live,
    entities: ['records', 'documents'],
  });

  async function run(e: Event) {
    e.preventDefault();
    setFormError(undefined);
    let parsedFilters: Record<string, unknown> | undefined;
    if (filters.trim()) {
      try {
        parsedFilters = JSON.parse(filters);
      } catch (err) {
        // Not JSON at all: said at the field, and nothing is sent.
        setFormError(
          new ApiError(0, { message: `filters: not JSON (${(err as Error).message})`, errorCode: 'NOT_SENT' }),
        );
        return;
      }
    }
    const contentTypes = [docs ? 'documents' : '', records ? 'records' : ''].filter(Boolean) as Array<
      'documents' | 'records'
    >;
    const body: Body<'searchContent'> = {
      query: q,
      ...(typeName ? { typeName } : {}),
      ...(folderId ? { folderId } : {}),
      ...(parsedFilters ? { filters: parsedFilters } : {}),
      ...(limit ? { limit: Number(limit) } : {}),
      ...(contentTypes.length && contentTypes.length < 2 ? { contentTypes } : {}),
    };
    lastBody.current = body;
    await searchAll(body);
  }

  async function searchAll(body: Body<'searchContent'>) {
    setBusy(true);
    const out = Object.fromEntries(
      await Promise.all(
        MODES.map(async (mode): Promise<[Mode, Leg]> => {
          const t0 = performance.now();
          try {
            const answer = await unwrap(client.POST('/v1/search', { body: { ...body, mode } }));
            return [mode, { answer, roundTripMs: performance.now() - t0 }];
          } catch (err) {
            return [mode, { error: asApiError(err), roundTripMs: performance.now() - t0 }];
          }
        }),
      ),
    ) as Record<Mode, Leg>;
    // A refusal of the request itself (the same field error in every mode) belongs at the field, not three times.
    const refused = MODES.map((m) => out[m].error).find((x) => x && fieldIssues(x).length && shownAtField(x, PATHS));
    setFormError(refused);
    setLegs(refused ? undefined : out);
    setBusy(false);
  }

  return (
    <section>
      <h1>Search playground</h1>
      <form onSubmit={run} class="search-form" aria-describedby="search-about">
        <p class="hint" id="search-about">
          One query in the three modes side by side (POST /v1/search with mode TEXT, SEMANTIC and HYBRID).
        </p>
        <TextField label="Query" path="query" value={q} onInput={setQ} error={formError} required />
        <div class="grid2">
          <TextField
            label="Type name"
            path="typeName"
            value={typeName}
            onInput={setTypeName}
            error={formError}
            hint="Only records or documents of this type"
          />
          <TextField
            label="Folder id"
            path="folderId"
            value={folderId}
            onInput={setFolderId}
            error={formError}
            hint="Only documents in this folder"
          />
          <TextField
            label="Filters (JSON)"
            path="filters"
            value={filters}
            onInput={setFilters}
            error={formError}
            multiline
            rows={2}
            hint='Payload fields, e.g. {"genre": "novel"}'
          />
          <TextField
            label="Results per mode"
            path="limit"
            value={limit}
            onInput={setLimit}
            error={formError}
            type="number"
          />
        </div>
        <fieldset>
          <legend>Content types</legend>
          <div class="flags">
            <CheckField label="documents" checked={docs} onChange={setDocs} />
            <CheckField label="records" checked={records} onChange={setRecords} />
          </div>
        </fieldset>
        <CheckField label="Live: search again when records or documents change" checked={live} onChange={setLive} />
        {live ? (
          <p class="hint" role="status">
            {changes.recent.length
              ? `${changes.recent.length} changes seen; last: ${changes.recent[0].type} ${changes.recent[0].entityId}`
              : 'Waiting for changes…'}
          </p>
        ) : null}
        <ErrorMessage error={changes.error} />
        {formError && !shownAtField(formError, PATHS) ? <ErrorMessage error={formError} /> : null}
        <div class="actions">
          <button type="submit" class="primary" disabled={busy}>
            {busy ? 'Searching…' : 'Search'}
          </button>
        </div>
      </form>
      {legs ? (
        <div class="modes">
          {MODES.map((m) => (
            <ModeColumn mode={m} leg={legs[m]!} />
          ))}
        </div>
      ) : null}
    </section>
  );
}

function ModeColumn({ mode, leg }: { mode: Mode; leg: Leg }) {
  const a = leg.answer;
  const title = useTitles(a?.results ?? []);
  return (
    <section class="mode" aria-labelledby={`mode-${mode}`}>
      <h2 id={`mode-${mode}`}>{mode}</h2>
      <p class="latency">
        {a ? `${a.totalResults} result${a.totalResults === 1 ? '' : 's'} · ${a.searchTimeMs} ms in the service · ` : ''}
        {Math.round(leg.roundTripMs)} ms round trip
        {a?.degraded ? ` · degraded (${a.degradedLegs.join(', ')} failed)` : ''}
      </p>
      <ErrorMessage error={leg.error} />
      {a ? (
        a.results.length ? (
          <ol class="hits" aria-label={`${mode} results`}>
            {a.results.map((r) => (
              <li>
                <p class="hit-head">
                  <strong>{title(r)}</strong> <code>{r.sourceType === 'GenericRecord' ? 'record' : 'document'}</code>
                </p>
                <p class="scores">
                  score {r.score.toFixed(4)} · text {r.textScore.toFixed(4)} · semantic {r.semanticScore.toFixed(4)}
                </p>
                <p>
                  <Snippet text={r.snippet ?? r.chunkText.slice(0, 240)} />
                </p>
              </li>
            ))}
          </ol>
        ) : (
          <p class="empty">No result.</p>
        )
      ) : null}
    </section>
  );
}
