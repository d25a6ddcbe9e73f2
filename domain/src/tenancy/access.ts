import { forbidden, type Principal } from '@svc/contracts';

export interface Owned {
  tenantId: string | null;
  contextId: string | null;
  userId: string | null;
  scopes: string[];
}

/**
 * Whether a principal may see an entity: same tenant and context, and inside
 * the credential's data scope (its userId, and at least one of its scopes).
 * Callers answer a miss with the same 404 as a missing entity.
 */
export function canReach(p: Principal, e: Owned): boolean {
  if (e.tenantId !== p.tenantId || e.contextId !== p.contextId) return false;
  return withinDataScope(p, e);
}

export function withinDataScope(p: Principal, e: Pick<Owned, 'userId' | 'scopes'>): boolean {
  const ds = p.dataScope;
  const userId = ds?.userId ?? p.userId;
  if (userId && e.userId !== userId) return false;
  if (ds?.scopes?.length && !e.scopes.some((s) => ds.scopes!.includes(s))) return false;
  return true;
}

/**
 * Identity auto-assign: a credential bound to an identity stamps its userId (and
 * its scopes when the write names none) on writes; naming another identity is a 403.
 */
export function stampOwnership(
  p: Principal,
  requested: { userId?: string | null; scopes?: string[] },
): { userId: string | null; scopes: string[] | undefined } {
  const boundUser = p.dataScope?.userId ?? p.userId;
  if (boundUser && requested.userId && requested.userId !== boundUser) throw forbidden();
  const boundScopes = p.dataScope?.scopes;
  // A scope-bound credential writes inside its scopes: an explicit set must be a non-empty subset of them.
  if (
    boundScopes?.length &&
    requested.scopes &&
    (requested.scopes.length === 0 || !requested.scopes.every((s) => boundScopes.includes(s)))
  )
    throw forbidden();
  return {
    userId: boundUser ?? requested.userId ?? null,
    scopes: requested.scopes ?? (boundScopes?.length ? boundScopes.slice(0, 2) : undefined),
  };
}

/**
 * Schemas: the shared base of a typeName (no userId, no scopes) is visible to
 * every credential of its context; an owned variant only inside the data scope.
 */
export function canSeeSchema(
  p: Principal,
  s: { tenantId: string | null; contextId: string | null; userId?: string | null; scopes?: string[] },
): boolean {
  if (s.tenantId !== p.tenantId || s.contextId !== p.contextId) return false;
  if (!s.userId && !s.scopes?.length) return true;
  return withinDataScope(p, { userId: s.userId ?? null, scopes: s.scopes ?? [] });
}
