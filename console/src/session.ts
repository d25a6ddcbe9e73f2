// The signed-in credential, kept in this tab's sessionStorage only: closing the tab forgets it, another tab does not
// see it, and nothing is written to localStorage or a cookie.
export type CredentialKind = 'tenant' | 'developer';

export interface Session {
  token: string;
  kind: CredentialKind;
  /** X-Context-Id, when the person chose a context other than the credential's own. */
  contextId?: string;
  /** What GET /v1/ping answered for a tenant credential. */
  tenantId?: string;
  livemode?: boolean;
  /** The context the credential acts in (the chosen one, else the credential's default). */
  actingContextId?: string;
}

const KEY = 'svc-console-session';

export function loadSession(): Session | undefined {
  try {
    const raw = sessionStorage.getItem(KEY);
    return raw ? (JSON.parse(raw) as Session) : undefined;
  } catch {
    return undefined;
  }
}

export function saveSession(s: Session): void {
  sessionStorage.setItem(KEY, JSON.stringify(s));
}

export function clearSession(): void {
  sessionStorage.removeItem(KEY);
}

/** Developer tokens start dt_; anything else is a tenant credential (a key, a minted token, a JWT). */
export const kindOf = (token: string): CredentialKind => (token.startsWith('dt_') ? 'developer' : 'tenant');
