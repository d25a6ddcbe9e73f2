import { type EventData, forbidden, InternalError, invalid, notFound, type Principal } from '@svc/contracts';
import { assertNever, type Decider, type EventsOf, unexpected } from '../shared/decider';
import { isSubset } from './permissions';

type Issued = EventData<'CredentialIssued'>;

/**
 * PostgreSQL NOTIFY channel on which the tenancy projection announces revocations (credential caches of other processes
 * listen).
 */
export const CREDENTIAL_CHANGE_CHANNEL = 'credential_change';

/** Events after which credentials that worked before may not: a revocation, a deleted context, a torn-down tenant. */
export const REVOKING_EVENTS: ReadonlySet<string> = new Set(['CredentialRevoked', 'ContextDeleted', 'TenantTornDown']);

/** The read model's list of a tenant's live root keys (for rotation). */
export interface RootKeyIndex {
  activeRootKeys(tenantId: string): Promise<string[]>;
}

/** One credential's stream: issued once, revoked at most once. */
export type CredentialState = { exists: false } | ({ exists: true; revoked: boolean } & Issued);

export type CredentialEvent = EventsOf<'CredentialIssued' | 'CredentialRevoked'>;

export type CredentialCommand =
  /** Ids, the secret's hash and the expiry arrive with the command. */
  | ({ type: 'IssueCredential' } & Issued)
  /** Revoking a live credential; a missing or already revoked one is the usual 404. */
  | { type: 'RevokeCredential' };

export const credentialDecider: Decider<CredentialState, CredentialCommand, CredentialEvent> = {
  initialState: () => ({ exists: false }),

  decide(cmd, s) {
    switch (cmd.type) {
      case 'IssueCredential': {
        if (s.exists) throw new InternalError('credential id reused');
        const { type: _, ...data } = cmd;
        return [{ type: 'CredentialIssued', data }];
      }
      case 'RevokeCredential':
        if (!s.exists || s.revoked) throw notFound();
        return [{ type: 'CredentialRevoked', data: { credentialId: s.credentialId } }];
      default:
        return assertNever(cmd);
    }
  },

  evolve(s, e) {
    switch (e.type) {
      case 'CredentialIssued':
        return { exists: true, revoked: false, ...e.data };
      case 'CredentialRevoked':
        return s.exists ? { ...s, revoked: true } : s;
      default:
        return unexpected(e, s);
    }
  },
};

/** What a credential can reach besides its context: its bound user (null: any) and its scopes (null: no limit). */
export interface Reach {
  userId: string | null;
  scopes: string[] | null;
}

/**
 * A principal's data reach, read the way every read and write path reads it (`dataScope` first, an empty scope list is
 * no limit).
 */
export function reachOf(p: Pick<Principal, 'dataScope' | 'userId'>): Reach {
  const scopes = p.dataScope?.scopes;
  return { userId: p.dataScope?.userId ?? p.userId ?? null, scopes: scopes?.length ? [...scopes] : null };
}

export interface ChildRequest {
  allowedActions: string[];
  userId?: string;
  dataScope?: { userId?: string; scopes?: string[] };
}

/**
 * Minting: a child reaches the intersection of its parent's reach and what it
 * asks for. Asking for anything the parent cannot reach is refused with 403:
 * a permission the parent lacks, another user than the parent's bound user, a
 * scope outside the parent's scopes, or no scope limit (`scopes: []`) from a
 * parent that has one. What the child omits it inherits. Naming two different
 * users (`userId` and `dataScope.userId`) is a 400.
 */
export function narrowChild(
  parent: Pick<Principal, 'allowedActions' | 'dataScope' | 'userId'>,
  child: ChildRequest,
): { dataScope: Issued['dataScope']; userId: string | null } {
  if (!isSubset(child.allowedActions, parent.allowedActions)) throw forbidden();
  if (child.userId !== undefined && child.dataScope?.userId !== undefined && child.userId !== child.dataScope.userId) {
    throw invalid('userId and scope.dataScope.userId name different users');
  }
  const reach = reachOf(parent);
  const wantedUser = child.userId ?? child.dataScope?.userId;
  if (reach.userId !== null && wantedUser !== undefined && wantedUser !== reach.userId) throw forbidden();
  const wantedScopes = child.dataScope?.scopes;
  if (
    reach.scopes !== null &&
    wantedScopes !== undefined &&
    (wantedScopes.length === 0 || !wantedScopes.every((s) => reach.scopes!.includes(s)))
  )
    throw forbidden();
  const userId = wantedUser ?? reach.userId;
  const scopes = wantedScopes?.length ? [...new Set(wantedScopes)] : reach.scopes;
  const dataScope =
    userId !== null || scopes !== null
      ? { ...(userId !== null ? { userId } : {}), ...(scopes !== null ? { scopes } : {}) }
      : null;
  return { dataScope, userId };
}
