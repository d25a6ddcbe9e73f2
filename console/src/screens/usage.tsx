// Usage and activity: the month's usage report (GET /v1/usage) as bar charts in inline SVG (no chart library):
// requests, writes, searches by mode, inference calls and credits, and the last six months' credits; the rate-limit
// headroom the service reported on the last counted answer of this tab (X-RateLimit-Limit / -Remaining);
// the activity log (GET /v1/admin/logs) with its filters.
import { useEffect, useState } from 'preact/hooks';
import type { Answer } from '@svc/client';
import { unwrap, useLoad, type ApiError } from '../api';
import { lastRateLimit, onRateLimit, type RateLimitReading } from '../rate-limit';
import { ErrorMessage } from '../components/errors';
import { CheckField, SelectField, TextField } from '../components/fields';
import type { ScreenProps } from './screen-props';

type Usage = Answer<'getUsage'>;
type LogEntry = Answer<'listAdminLogs'>['entries'][number];
interface Bar {
  label: string;
  value: number;
}

/**
 * A horizontal bar chart: one labelled bar per value, scaled to the largest; a table of the same figures for screen
 * readers.
 */
export function BarChart({ title, bars, unit = '' }: { title: string; bars: Bar[]; unit?: string }) {
  const max = Math.max(1, ...bars.map((b) => b.value));
  const row = 26;
  const labelW = 150;
  const width = 520;
  const id = `chart-${title.replace(/\W+/g, '-').toLowerCase()}`;
  return (
    <figure class="chart" aria-labelledby={id}>
      <figcaption id={id}>{title}</figcaption>
      <svg
        role="img"
        aria-label={`${title}: ${bars.map((b) => `${b.label} ${b.value}${unit}`).join(', ')}`}
        viewBox={`0 0 ${width} ${bars.length * row + 4}`}
        width={width}
        height={bars.length * row + 4}
      >
        {bars.map((b, i) => {
          const w = Math.round(((width - labelW - 70) * b.value) / max);
          return (
            <g transform={`translate(0 ${i * row + 2})`}>
              <text x={labelW - 6} y={row / 2 + 4} text-anchor="end" font-size="12" fill="#1b1f24">
                {b.label}
              </text>
              <rect
                class="bar"
                x={labelW}
                y={3}
                width={Math.max(w, b.value > 0 ? 2 : 0)}
                height={row - 8}
                fill="#1f4e8c"
                data-value={b.value}
              />
              <text x={labelW + w + 6} y={row / 2 + 4} font-size="12" fill="#1b1f24">
                {b.value}
                {unit}
              </text>
            </g>
          );
        })}
      </svg>
    </figure>
  );
}

const monthsBack = (n: number) => {
  const now = new Date();
  return Array.from({ length: n }, (_, i) => {
    const d = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - (n - 1 - i), 1));
    return { year: d.getUTCFullYear(), month: d.getUTCMonth() + 1 };
  });
};

export default function UsageScreen(_: ScreenProps) {
  const report = useLoad((c) => unwrap(c.GET('/v1/usage')), []);
  const history = useLoad(
    async (c) =>
      Promise.all(
        monthsBack(6).map(async (m) => ({ ...m, usage: await unwrap(c.GET('/v1/usage', { params: { query: m } })) })),
      ),
    [],
  );
  const u = report.data;
  return (
    <section>
      <h1>Usage and activity</h1>
      {/* Usage is tallied beside the requests, so the last few seconds' may not be counted yet. */}
      <p class="actions">
        <button type="button" onClick={() => (report.reload(), history.reload())}>
          Refresh usage
        </button>
      </p>
      <ErrorMessage error={report.error} />
      <Headroom />
      {u ? (
        <>
          <p>
            Period <strong>{u.period}</strong> · plan {u.plan} · credits used {u.credits.used}
            {u.credits.limit !== undefined ? ` of ${u.credits.limit}` : ''}
          </p>
          <div class="charts">
            <BarChart
              title="Requests"
              bars={[
                { label: 'API reads', value: u.reads.calls.used },
                { label: 'Script runs', value: u.execution.executions },
                {
                  label: 'Inference calls',
                  value:
                    u.inference.endpoints.rag.calls +
                    u.inference.endpoints.ask.calls +
                    u.inference.endpoints.chat.calls,
                },
              ]}
            />
            <BarChart
              title="Writes"
              bars={[
                { label: 'Record writes', value: u.records.writes.count },
                { label: 'Document writes', value: u.documents.writes.count },
                { label: 'Indexed writes', value: u.records.writes.indexCount + u.documents.writes.indexCount },
              ]}
            />
            <BarChart
              title="Searches"
              bars={[
                { label: 'TEXT', value: u.search.queries.text.count },
                { label: 'SEMANTIC', value: u.search.queries.semantic.count },
                { label: 'HYBRID', value: u.search.queries.hybrid.count },
              ]}
            />
            <BarChart
              title="Inference"
              bars={[
                { label: 'RAG', value: u.inference.endpoints.rag.calls },
                { label: 'Ask a document', value: u.inference.endpoints.ask.calls },
                { label: 'Chat', value: u.inference.endpoints.chat.calls },
                { label: 'Cost (cents)', value: u.inference.costCents },
              ]}
            />
            <BarChart
              title="Credits by use"
              bars={Object.entries(u.credits.breakdown)
                .filter(([k]) => !k.endsWith('Milli'))
                .map(([label, value]) => ({ label, value: Math.round(value * 1000) / 1000 }))}
            />
            {history.data ? (
              <BarChart
                title="Credits per month"
                bars={history.data.map((h) => ({
                  label: `${h.year}-${String(h.month).padStart(2, '0')}`,
                  value: h.usage.credits.used,
                }))}
              />
            ) : null}
          </div>
        </>
      ) : null}
      <Activity />
    </section>
  );
}

/**
 * The last X-RateLimit figures an answer of this tab carried (reading them costs no request: only counted calls carry
 * them).
 */
function Headroom() {
  const [r, setR] = useState<RateLimitReading | undefined>(lastRateLimit);
  useEffect(() => onRateLimit(setR), []);
  if (!r)
    return (
      <p class="headroom">
        Rate-limit headroom: no counted request (a write, a search, an inference) from this tab yet; the service reports
        the headroom on those answers.
      </p>
    );
  return (
    <div class="headroom">
      <p id="headroom-label">
        Rate-limit headroom: <strong>{r.remaining}</strong> of {r.limit} requests left in this minute's window, as the
        answer to {r.request} at {new Date(r.at).toLocaleTimeString()} said (X-RateLimit-Remaining / -Limit; the window
        resets at the top of each minute).
      </p>
      <meter
        aria-labelledby="headroom-label"
        min={0}
        max={r.limit}
        value={r.remaining}
        low={r.limit * 0.2}
        optimum={r.limit}
      />
    </div>
  );
}

const RESOURCES = [
  '',
  'documents',
  'records',
  'search',
  'schemas',
  'folders',
  'usage',
  'models',
  'rag',
  'chat',
  'ask',
  'export',
  'erasure-requests',
  'auth',
  'ping',
  'entities',
  'namespaces',
  'users',
  'clients',
  'orgs',
];

function Activity() {
  const [resource, setResource] = useState('');
  const [method, setMethod] = useState('');
  const [errorsOnly, setErrorsOnly] = useState(false);
  const [startTime, setStart] = useState('');
  const [endTime, setEnd] = useState('');
  const [keyId, setKeyId] = useState('');
  const [applied, setApplied] = useState<Record<string, string>>({});
  const log = useLoad(
    (c) => unwrap(c.GET('/v1/admin/logs', { params: { query: { limit: '50', ...applied } } })),
    [JSON.stringify(applied)],
  );
  const error: ApiError | undefined = log.error;
  return (
    <section aria-labelledby="activity-h">
      <h2 id="activity-h">Activity log</h2>
      <form
        onSubmit={(e) => {
          e.preventDefault();
          const q: Record<string, string> = {};
          if (resource) q.resource = resource;
          if (method) q.method = method;
          if (errorsOnly) q.errorsOnly = 'true';
          if (startTime) q.startTime = startTime;
          if (endTime) q.endTime = endTime;
          if (keyId) q.keyId = keyId;
          setApplied(q);
        }}
      >
        <div class="grid2">
          <SelectField
            label="Resource"
            path="resource"
            value={resource}
            onChange={setResource}
            error={error}
            options={RESOURCES.map((r) => ({ value: r, label: r || 'any' }))}
          />
          <SelectField
            label="Method"
            path="method"
            value={method}
            onChange={setMethod}
            error={error}
            options={['', 'GET', 'POST', 'PUT', 'PATCH', 'DELETE'].map((m) => ({ value: m, label: m || 'any' }))}
          />
          <TextField
            label="From (ISO time)"
            path="startTime"
            value={startTime}
            onInput={setStart}
            error={error}
            placeholder="2026-01-01T00:00:00Z"
          />
          <TextField label="Until (ISO time)" path="endTime" value={endTime} onInput={setEnd} error={error} />
          <TextField label="Key id" path="keyId" value={keyId} onInput={setKeyId} error={error} />
        </div>
        <CheckField label="Errors only" checked={errorsOnly} onChange={setErrorsOnly} />
        <button type="submit" class="primary">
          Apply filters
        </button>
      </form>
      {error &&
      !['resource', 'method', 'startTime', 'endTime', 'keyId'].some((p) => JSON.stringify(error.body).includes(p)) ? (
        <ErrorMessage error={error} />
      ) : null}
      <table aria-busy={log.loading ? 'true' : 'false'}>
        <caption>Requests, newest first{log.data?.truncated ? ' (more than shown: narrow the filters)' : ''}</caption>
        <thead>
          <tr>
            <th scope="col">Time</th>
            <th scope="col">Method</th>
            <th scope="col">Path</th>
            <th scope="col">Resource</th>
            <th scope="col">Status</th>
            <th scope="col">Error</th>
            <th scope="col">Duration</th>
            <th scope="col">Key</th>
          </tr>
        </thead>
        <tbody>
          {log.data?.entries.length ? (
            log.data.entries.map((x: LogEntry) => (
              <tr>
                <td>{x.timestamp}</td>
                <td>{x.method}</td>
                <td>
                  <code>{x.path ?? ''}</code>
                </td>
                <td>{x.resource}</td>
                <td>{x.status}</td>
                <td>{x.errorCode ?? ''}</td>
                <td>{x.durationMs !== undefined ? `${x.durationMs} ms` : ''}</td>
                <td>
                  <code>{x.keyId ?? ''}</code>
                </td>
              </tr>
            ))
          ) : (
            <tr>
              <td colSpan={8} class="empty">
                {log.loading ? 'Loading…' : 'No request matches.'}
              </td>
            </tr>
          )}
        </tbody>
      </table>
    </section>
  );
}
