// The sign-in screen (the first screen: part of the main bundle). A tenant credential (a root or scoped key, a
// minted token, a JWT of the tenant's identity provider) is checked with GET /v1/ping, which answers its tenant and
// context; the developer token is recognised by the same call (it is a known credential that may not use /v1: 403)
// and opens the developer portal's pages. Nothing is stored until the service accepted the credential, and then only
// in this tab's sessionStorage.
import { useState } from 'preact/hooks';
import { ApiError, asApiError, clientFor } from './api';
import { ErrorMessage, shownAtField } from './components/errors';
import { TextField } from './components/fields';
import { kindOf, type Session } from './session';

export function SignIn({ onSignedIn }: { onSignedIn: (s: Session) => void }) {
  const [token, setToken] = useState('');
  const [contextId, setContextId] = useState('');
  const [error, setError] = useState<ApiError>();
  const [busy, setBusy] = useState(false);

  async function submit(e: Event) {
    e.preventDefault();
    setBusy(true);
    setError(undefined);
    const t = token.trim();
    const ctx = contextId.trim() || undefined;
    try {
      const kind = kindOf(t);
      const client = clientFor({ token: t, contextId: ctx });
      const { data, error: refused, response } = await client.GET('/v1/ping');
      if (response.ok && data) {
        onSignedIn({
          token: t,
          kind: 'tenant',
          contextId: ctx,
          tenantId: data.tenantId,
          livemode: data.livemode,
          actingContextId: data.contextId ?? undefined,
        });
      } else if (response.status === 403 && kind === 'developer') {
        onSignedIn({ token: t, kind: 'developer' });
      } else {
        const err = new ApiError(response.status, refused, response.headers.get('x-request-id'));
        // The refusal is about the credential (or the context it asked for): shown at that field.
        const body = err.body as Record<string, unknown>;
        const at = response.status === 404 && ctx ? 'contextId' : 'token';
        setError(new ApiError(err.status, { ...body, field: at }, err.requestId));
      }
    } catch (x) {
      setError(asApiError(x));
    } finally {
      setBusy(false);
    }
  }

  return (
    <main id="main" class="signin">
      <h1>Sign in to the console</h1>
      <p>
        Paste a key or token of a tenant (<code>sk_test_…</code>, <code>sk_live_…</code>, a scoped key or a minted
        token), or your account's developer token (<code>dt_…</code>) for the developer portal. It is kept in this
        browser tab only and forgotten when the tab closes.
      </p>
      <form onSubmit={submit} aria-describedby="signin-note">
        <TextField
          label="Key or token"
          path="token"
          type="password"
          value={token}
          onInput={setToken}
          error={error}
          required
          autocomplete="off"
        />
        <TextField
          label="Context id (optional)"
          path="contextId"
          value={contextId}
          onInput={setContextId}
          error={error}
          hint="Act in another context of the tenant (sent as X-Context-Id); empty: the credential's own."
        />
        {shownAtField(error, ['token', 'contextId']) ? null : <ErrorMessage error={error} />}
        <button type="submit" class="primary" disabled={busy || !token.trim()}>
          {busy ? 'Signing in…' : 'Sign in'}
        </button>
      </form>
      <p id="signin-note" class="hint">
        Every call of the console goes through the public API with this credential: it can do exactly what the
        credential may.
      </p>
    </main>
  );
}
