// Tokens: mint a scoped token (POST /v1/tokens: allowed actions, data scope, time to live) and revoke one
// (DELETE /v1/tokens/{id}). The API has no list of tokens, so the list is the tokens minted in this browser tab
// (their ids and expiry, never the secret, kept in sessionStorage beside the session); a token minted elsewhere is
// revoked by its id.
import { useState } from 'preact/hooks';
import type { Answer } from '@svc/client';
import { asApiError, unwrap, useClient, type ApiError } from '../api';
import { ErrorMessage, shownAtField } from '../components/errors';
import { TextField } from '../components/fields';
import type { ScreenProps } from './screen-props';

type Minted = Answer<'mintToken'>;
interface Kept {
  id: string;
  actions: string[];
  expiresAt: string | null;
  revoked?: boolean;
}

const STORE = 'svc-console-tokens';
const kept = (): Kept[] => {
  try {
    return JSON.parse(sessionStorage.getItem(STORE) ?? '[]') as Kept[];
  } catch {
    return [];
  }
};
const keep = (list: Kept[]) => sessionStorage.setItem(STORE, JSON.stringify(list));
const PATHS = ['scope.allowedActions', 'scope.dataScope', 'userId', 'expiresInSeconds', 'contextId'];
const ACTIONS_HINT =
  '<resource>:<action> with actions c r u d x, separated by commas: records:r, records:c, search:r, documents:*, …';
const split = (s: string) =>
  s
    .split(/[\s,]+/)
    .map((x) => x.trim())
    .filter(Boolean);

export default function Tokens(_: ScreenProps) {
  const client = useClient();
  const [actions, setActions] = useState('records:r, search:r');
  const [scopeUser, setScopeUser] = useState('');
  const [scopes, setScopes] = useState('');
  const [ttl, setTtl] = useState('3600');
  const [error, setError] = useState<ApiError>();
  const [minted, setMinted] = useState<Minted>();
  const [list, setList] = useState<Kept[]>(kept);
  const [revokeId, setRevokeId] = useState('');
  const [revokeError, setRevokeError] = useState<ApiError>();
  const [notice, setNotice] = useState('');

  async function mint(e: Event) {
    e.preventDefault();
    setError(undefined);
    setMinted(undefined);
    const dataScope =
      scopeUser || scopes
        ? { ...(scopeUser ? { userId: scopeUser } : {}), ...(scopes ? { scopes: split(scopes) } : {}) }
        : undefined;
    try {
      const t = await unwrap(
        client.POST('/v1/tokens', {
          body: {
            scope: { allowedActions: split(actions), ...(dataScope ? { dataScope } : {}) },
            ...(ttl ? { expiresInSeconds: Number(ttl) } : {}),
          },
        }),
      );
      setMinted(t);
      const next = [{ id: t.id, actions: split(actions), expiresAt: t.expiresAt }, ...list];
      keep(next);
      setList(next);
    } catch (err) {
      setError(asApiError(err));
    }
  }

  async function revoke(id: string) {
    setRevokeError(undefined);
    setNotice('');
    try {
      await unwrap(client.DELETE('/v1/tokens/{id}', { params: { path: { id } } }));
      const next = list.map((k) => (k.id === id ? { ...k, revoked: true } : k));
      keep(next);
      setList(next);
      setNotice(`Token ${id} is revoked: the service refuses it from now on.`);
      setRevokeId('');
    } catch (err) {
      setRevokeError(asApiError(err));
    }
  }

  return (
    <section>
      <h1>Tokens</h1>
      <form onSubmit={mint}>
        <h2>Mint a token</h2>
        <TextField
          label="Allowed actions"
          path="scope.allowedActions"
          value={actions}
          onInput={setActions}
          error={error}
          hint={ACTIONS_HINT}
          required
        />
        <div class="grid2">
          <TextField
            label="Data scope: user id"
            path="scope.dataScope.userId"
            value={scopeUser}
            onInput={setScopeUser}
            error={error}
            hint="Only this user's data"
          />
          <TextField
            label="Data scope: scopes"
            path="scope.dataScope.scopes"
            value={scopes}
            onInput={setScopes}
            error={error}
            hint="Only data of these scopes (comma separated)"
          />
          <TextField
            label="Time to live (seconds)"
            path="expiresInSeconds"
            value={ttl}
            onInput={setTtl}
            error={error}
            type="number"
          />
        </div>
        {error && !shownAtField(error, PATHS) ? <ErrorMessage error={error} /> : null}
        <div class="actions">
          <button type="submit" class="primary">
            Mint token
          </button>
        </div>
      </form>
      {minted ? (
        <div class="notice" role="status">
          <p>
            Token <code>{minted.id}</code> minted{minted.expiresAt ? `, valid until ${minted.expiresAt}` : ''}. Copy it
            now: it is not shown again.
          </p>
          <TextField label="New token" value={minted.token} onInput={() => {}} />
        </div>
      ) : null}
      <h2>Tokens minted here</h2>
      {notice ? (
        <p class="notice" role="status">
          {notice}
        </p>
      ) : null}
      <ErrorMessage error={revokeError} />
      <table>
        <caption>Tokens minted in this tab</caption>
        <thead>
          <tr>
            <th scope="col">Id</th>
            <th scope="col">Allowed actions</th>
            <th scope="col">Expires</th>
            <th scope="col">State</th>
          </tr>
        </thead>
        <tbody>
          {list.length ? (
            list.map((k) => (
              <tr key={k.id}>
                <td>
                  <code>{k.id}</code>
                </td>
                <td>{k.actions.join(', ')}</td>
                <td>{k.expiresAt ?? 'never'}</td>
                <td>
                  {k.revoked ? (
                    'revoked'
                  ) : (
                    <button
                      type="button"
                      class="danger small"
                      onClick={() => revoke(k.id)}
                      aria-label={`Revoke token ${k.id}`}
                    >
                      Revoke
                    </button>
                  )}
                </td>
              </tr>
            ))
          ) : (
            <tr>
              <td colSpan={4} class="empty">
                No token minted in this tab.
              </td>
            </tr>
          )}
        </tbody>
      </table>
      <form
        onSubmit={(e) => {
          e.preventDefault();
          void revoke(revokeId);
        }}
      >
        <h2>Revoke a token by id</h2>
        <TextField label="Token id" path="id" value={revokeId} onInput={setRevokeId} error={revokeError} required />
        <button type="submit" class="danger">
          Revoke
        </button>
      </form>
    </section>
  );
}
