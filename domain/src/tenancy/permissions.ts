/**
 * Permission strings `<resource>:<action>[:<name>]`. `*` is the root wildcard;
 * `<resource>:*` covers every action on a resource; `scripts:x` covers
 * `scripts:x:<name>`.
 */
export const ACTIONS = ['c', 'r', 'u', 'd', 'x'] as const;

/**
 * Whether `held` covers `required`. A required name of `*` (`scripts:x:*`, a
 * route's check before it knows the name) asks for the action on at least one
 * name: `scripts:x:<any name>` covers it too. Held strings never carry a `*`
 * name (PERMISSION_RE), so this widens nothing a credential holds.
 */
export function grants(held: readonly string[], required: string): boolean {
  const [res, act, name] = required.split(':');
  for (const h of held) {
    if (h === '*' || h === required) return true;
    const [hr, ha, hn] = h.split(':');
    if (hr !== res) continue;
    if (ha === '*') return true;
    if (ha === act && hn === undefined && name !== undefined) return true;
    if (ha === act && name === '*' && hn !== undefined) return true;
  }
  return false;
}

/**
 * Whether `held` passes a route's permission check: its `permission`, and at least one of its `anyPermission` (the
 * guard's check and scripts' read routes alike).
 */
export const permitsRoute = (
  held: readonly string[],
  route: { permission?: string; anyPermission?: readonly string[] },
): boolean =>
  (!route.permission || grants(held, route.permission)) &&
  (!route.anyPermission || route.anyPermission.some((a) => grants(held, a)));

/** A permission list `child` may be minted from `parent` only when each entry is covered. */
export const isSubset = (child: readonly string[], parent: readonly string[]) => child.every((c) => grants(parent, c));

export const PERMISSION_RE = /^(\*|[a-z][a-z-]*:(\*|[a-z])(:[A-Za-z0-9_-]{1,64})?)$/;
