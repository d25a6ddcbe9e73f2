// The developer portal (signed in with the developer token): a tenant's keys (create with allowed actions and data
// scope, delete by id: the API lists none), its webhooks (create, each one's delivery history with status and
// attempts, retry a delivery) and the account's domains (add, verify). The tenant is typed in once (the developer
// token does not name one) and kept for this tab.
import { useCallback, useState } from 'preact/hooks';
import type { Answer } from '@svc/client';
import { asApiError, unwrap, useClient, useLoad, type ApiError } from '../api';
import { ErrorMessage, shownAtField } from '../components/errors';
import { CheckField, TextField } from '../components/fields';
import { PagedTable, type Column } from '../components/paged-table';
import { href } from '../router';
import type { ScreenProps } from './screen-props';

type Webhook = Answer<'getWebhook'>;
type Delivery = Answer<'retryWebhookDelivery'>;
const TENANT = 'svc-console-dev-tenant';
const EVENTS = ['document.indexed', 'document.failed', 'record.indexed', 'record.failed', 'trigger.failed'] as const;
const split = (s: string) =>
  s
    .split(/[\s,]+/)
    .map((x) => x.trim())
    .filter(Boolean);

export default function Developer({ params }: ScreenProps) {
  const [tenantId, setTenant] = useState(() => sessionStorage.getItem(TENANT) ?? '');
  const [draft, setDraft] = useState(tenantId);
  const section = params[0] ?? 'webhooks';
  return (
    <section>
      <h1>Developer portal</h1>
      <form
        class="inline"
        onSubmit={(e) => {
          e.preventDefault();
          sessionStorage.setItem(TENANT, draft.trim());
          setTenant(draft.trim());
        }}
      >
        <TextField
          label="Tenant id"
          value={draft}
          onInput={setDraft}
          hint="The tenant whose keys and webhooks to manage (bootstrap.json names them)"
        />
        <button type="submit">Use this tenant</button>
      </form>
      <nav class="tabs" aria-label="Developer portal sections">
        {['webhooks', 'keys', 'domains'].map((s) => (
          <a href={href('developer', s)} aria-current={section === s ? 'page' : undefined}>
            {s[0].toUpperCase() + s.slice(1)}
          </a>
        ))}
      </nav>
      {section === 'keys' ? (
        <Keys tenantId={tenantId} />
      ) : section === 'domains' ? (
        <Domains />
      ) : params[1] ? (
        <Deliveries webhookId={params[1]} />
      ) : (
        <Webhooks tenantId={tenantId} />
      )}
    </section>
  );
}

function Keys({ tenantId }: { tenantId: string }) {
  const client = useClient();
  const [actions, setActions] = useState('records:r');
  const [scopeUser, setScopeUser] = useState('');
  const [crossContext, setCross] = useState(false);
  const [error, setError] = useState<ApiError>();
  const [created, setCreated] = useState<Answer<'createKey'>>();
  const [deleteId, setDeleteId] = useState('');
  const [deleteError, setDeleteError] = useState<ApiError>();
  const [notice, setNotice] = useState('');
  return (
    <>
      <form
        onSubmit={async (e) => {
          e.preventDefault();
          setError(undefined);
          try {
            setCreated(
              await unwrap(
                client.POST('/developer/keys', {
                  body: {
                    tenantId,
                    allowedActions: split(actions),
                    crossContext,
                    ...(scopeUser ? { dataScope: { userId: scopeUser } } : {}),
                  },
                }),
              ),
            );
          } catch (err) {
            setError(asApiError(err));
          }
        }}
      >
        <h2>Create a key</h2>
        <TextField
          label="Allowed actions"
          path="allowedActions"
          value={actions}
          onInput={setActions}
          error={error}
          hint="<resource>:<action> with actions c r u d x (records:r, documents:*), comma separated"
          required
        />
        <TextField
          label="Data scope: user id"
          path="dataScope.userId"
          value={scopeUser}
          onInput={setScopeUser}
          error={error}
        />
        <CheckField
          label="Cross-context (may act in any context with X-Context-Id)"
          checked={crossContext}
          onChange={setCross}
        />
        {error && !shownAtField(error, ['allowedActions', 'dataScope', 'tenantId']) ? (
          <ErrorMessage error={error} />
        ) : null}
        {error && shownAtField(error, ['tenantId']) ? <ErrorMessage error={error} /> : null}
        <button type="submit" class="primary">
          Create key
        </button>
      </form>
      {created ? (
        <div class="notice" role="status">
          <p>
            Key <code>{created.id}</code> created for context <code>{created.contextId}</code>. Copy it now: it is not
            shown again.
          </p>
          <TextField label="New key" value={created.key} onInput={() => {}} />
        </div>
      ) : null}
      <form
        onSubmit={async (e) => {
          e.preventDefault();
          setDeleteError(undefined);
          setNotice('');
          try {
            await unwrap(client.DELETE('/developer/keys/{id}', { params: { path: { id: deleteId } } }));
            setNotice(`Key ${deleteId} deleted.`);
          } catch (err) {
            setDeleteError(asApiError(err));
          }
        }}
      >
        <h2>Delete a key</h2>
        <TextField label="Key id" path="id" value={deleteId} onInput={setDeleteId} error={deleteError} required />
        {notice ? (
          <p class="notice" role="status">
            {notice}
          </p>
        ) : null}
        <button type="submit" class="danger">
          Delete key
        </button>
      </form>
    </>
  );
}

function Webhooks({ tenantId }: { tenantId: string }) {
  const client = useClient();
  const [url, setUrl] = useState('');
  const [events, setEvents] = useState<string[]>(['record.indexed']);
  const [error, setError] = useState<ApiError>();
  const [created, setCreated] = useState<Answer<'createWebhook'>>();
  const load = useCallback(
    (cursor: string | undefined) =>
      unwrap(
        client.GET('/developer/webhooks', {
          params: { query: { tenantId, limit: 20, ...(cursor ? { startFrom: cursor } : {}) } },
        }),
      ),
    [client, tenantId, created],
  );
  const columns: Column<Webhook>[] = [
    { label: 'URL', cell: (w) => <a href={href('developer', 'webhooks', w.id)}>{w.url}</a> },
    { label: 'Events', cell: (w) => w.events.join(', ') },
    { label: 'Status', cell: (w) => `${w.status}${w.disabledReason ? ` (${w.disabledReason})` : ''}` },
    { label: 'Consecutive failures', cell: (w) => w.consecutiveFailures },
  ];
  return (
    <>
      {tenantId ? (
        <PagedTable
          caption="Webhooks of this tenant"
          columns={columns}
          load={load}
          rowKey={(w) => w.id}
          empty="No webhook yet."
        />
      ) : (
        <p>Name a tenant above to see its webhooks.</p>
      )}
      <form
        onSubmit={async (e) => {
          e.preventDefault();
          setError(undefined);
          try {
            setCreated(
              await unwrap(
                client.POST('/developer/webhooks', {
                  body: { tenantId, url, events: events as Array<(typeof EVENTS)[number]> },
                }),
              ),
            );
          } catch (err) {
            setError(asApiError(err));
          }
        }}
      >
        <h2>Add a webhook</h2>
        <TextField
          label="URL"
          path="url"
          value={url}
          onInput={setUrl}
          error={error}
          hint="https, on a verified domain of the account"
          required
        />
        <fieldset>
          <legend>Events</legend>
          <div class="flags">
            {EVENTS.map((ev) => (
              <CheckField
                label={ev}
                checked={events.includes(ev)}
                onChange={(on) => setEvents(on ? [...events, ev] : events.filter((x) => x !== ev))}
                path="events"
                error={error}
              />
            ))}
          </div>
        </fieldset>
        {error && !shownAtField(error, ['url', 'events']) ? <ErrorMessage error={error} /> : null}
        <button type="submit" class="primary">
          Add webhook
        </button>
      </form>
      {created ? (
        <div class="notice" role="status">
          <p>
            Webhook <code>{created.id}</code> added. Its signing secret (shown once): <code>{created.secret}</code>
          </p>
        </div>
      ) : null}
    </>
  );
}

function Deliveries({ webhookId }: { webhookId: string }) {
  const client = useClient();
  const hook = useLoad(
    (c) => unwrap(c.GET('/developer/webhooks/{id}', { params: { path: { id: webhookId } } })),
    [webhookId],
  );
  const [round, setRound] = useState(0);
  const [error, setError] = useState<ApiError>();
  const [notice, setNotice] = useState('');
  const load = useCallback(
    (cursor: string | undefined) =>
      unwrap(
        client.GET('/developer/webhooks/{id}/deliveries', {
          params: { path: { id: webhookId }, query: { limit: 20, ...(cursor ? { startFrom: cursor } : {}) } },
        }),
      ),
    [client, webhookId, round],
  );
  async function retry(d: Delivery) {
    setError(undefined);
    setNotice('');
    try {
      const r = await unwrap(
        client.POST('/developer/webhooks/{id}/deliveries/{deliveryId}/retry', {
          params: { path: { id: webhookId, deliveryId: d.id } },
        }),
      );
      setNotice(`Delivery ${r.id} is ${r.status} again (attempt ${r.attempts}).`);
      setRound(round + 1);
    } catch (err) {
      setError(asApiError(err));
    }
  }
  const columns: Column<Delivery>[] = [
    { label: 'Delivery', cell: (d) => <code>{d.id}</code> },
    { label: 'Event', cell: (d) => d.eventType },
    { label: 'Payload', cell: (d) => `${d.sourceType} ${d.sourceId}` },
    { label: 'Status', cell: (d) => <span class={`status status-${d.status}`}>{d.status}</span> },
    { label: 'Attempts', cell: (d) => d.attempts },
    { label: 'Created', cell: (d) => d.createdAt },
    { label: 'Next retry', cell: (d) => d.nextRetryAt ?? '—' },
    {
      label: 'Retry',
      // The API re-queues only a delivery that has given up (FAILED).
      cell: (d) =>
        d.status === 'FAILED' ? (
          <button type="button" class="small" onClick={() => retry(d)} aria-label={`Retry delivery ${d.id}`}>
            Retry
          </button>
        ) : (
          '—'
        ),
    },
  ];
  return (
    <>
      <h2>Deliveries of {hook.data ? hook.data.url : webhookId}</h2>
      <ErrorMessage error={hook.error ?? error} />
      {notice ? (
        <p class="notice" role="status">
          {notice}
        </p>
      ) : null}
      <div class="actions">
        <button type="button" onClick={() => setRound(round + 1)}>
          Refresh
        </button>
        <a href={href('developer', 'webhooks')}>All webhooks</a>
      </div>
      <PagedTable
        caption="Delivery history"
        columns={columns}
        load={load}
        rowKey={(d) => d.id}
        empty="Nothing delivered yet."
      />
    </>
  );
}

function Domains() {
  const client = useClient();
  const [domain, setDomain] = useState('');
  const [error, setError] = useState<ApiError>();
  const [round, setRound] = useState(0);
  const load = useCallback(
    (cursor: string | undefined) =>
      unwrap(
        client.GET('/developer/domains', {
          params: { query: { limit: 20, ...(cursor ? { startFrom: cursor } : {}) } },
        }),
      ),
    [client, round],
  );
  async function verify(d: string) {
    setError(undefined);
    try {
      await unwrap(client.POST('/developer/domains/{domain}/verify', { params: { path: { domain: d } } }));
    } catch (err) {
      setError(asApiError(err));
    }
    setRound(round + 1);
  }
  type D = Answer<'createDomain'>;
  const columns: Column<D>[] = [
    { label: 'Domain', cell: (d) => d.domain },
    { label: 'Verification token', cell: (d) => <code>{d.verificationToken}</code> },
    {
      label: 'Verified',
      cell: (d) =>
        d.verified ? (
          'yes'
        ) : (
          <button type="button" class="small" onClick={() => verify(d.domain)} aria-label={`Verify ${d.domain}`}>
            Verify
          </button>
        ),
    },
  ];
  return (
    <>
      <ErrorMessage error={error && !shownAtField(error, ['domain']) ? error : undefined} />
      <PagedTable
        caption="Domains of the account"
        columns={columns}
        load={load}
        rowKey={(d) => d.domain}
        empty="No domain yet."
      />
      <form
        onSubmit={async (e) => {
          e.preventDefault();
          setError(undefined);
          try {
            await unwrap(client.POST('/developer/domains', { body: { domain } }));
            setDomain('');
            setRound(round + 1);
          } catch (err) {
            setError(asApiError(err));
          }
        }}
      >
        <h2>Add a domain</h2>
        <TextField
          label="Domain"
          path="domain"
          value={domain}
          onInput={setDomain}
          error={error}
          hint="Publish the verification token as a DNS TXT record, then Verify"
          required
        />
        <button type="submit" class="primary">
          Add domain
        </button>
      </form>
    </>
  );
}
