import {
  type EventData,
  invalid,
  JWT_CLAIM_DEFAULTS,
  type JwtIssuerView,
  MAX_JWT_ISSUERS_PER_TENANT,
  type PutJwtIssuersBody,
} from '@svc/contracts';
import type { Decider, EventsOf } from '../shared/decider';

/** One registration as stored: the claim mapping with its defaults filled in. */
export type JwtIssuer = EventData<'JwtIssuersSet'>['issuers'][number];

/** A tenant's identity-provider registrations (stream `jwt-issuers-<tenantId>`). */
export type JwtIssuersState = { issuers: JwtIssuer[] };

export type JwtIssuersEvent = EventsOf<'JwtIssuersSet'>;

/**
 * PUT /operator/tenants/{tenantId}/jwt-issuers: the whole list, replacing the previous one (an empty list removes them
 * all).
 */
export type JwtIssuersCommand = {
  type: 'SetJwtIssuers';
  tenantId: string;
  accountId: string;
  issuers: PutJwtIssuersBody['issuers'];
};

/** The reservation that makes an (issuer, audience) pair one tenant's: its key parts. */
export const jwtIssuerReservation = (i: Pick<JwtIssuer, 'issuer' | 'audience'>): string[] => [
  'jwt-issuer',
  i.issuer,
  i.audience,
];

const pairKey = (i: Pick<JwtIssuer, 'issuer' | 'audience'>) => JSON.stringify([i.issuer, i.audience]);

/** The pairs `before` holds and `after` does not (to release), and those `after` adds (to claim). */
export function jwtIssuerPairChanges(
  before: JwtIssuer[],
  after: JwtIssuer[],
): { released: JwtIssuer[]; claimed: JwtIssuer[] } {
  const was = new Set(before.map(pairKey));
  const will = new Set(after.map(pairKey));
  return { released: before.filter((i) => !will.has(pairKey(i))), claimed: after.filter((i) => !was.has(pairKey(i))) };
}

/** A registration as the API shows it: `jwksUrl` and `defaultPermissions` only when registered. */
export const jwtIssuerView = (i: JwtIssuer): JwtIssuerView => ({
  issuer: i.issuer,
  audience: i.audience,
  ...(i.jwksUrl !== null ? { jwksUrl: i.jwksUrl } : {}),
  claims: { ...i.claims },
  ...(i.defaultPermissions !== null ? { defaultPermissions: [...i.defaultPermissions] } : {}),
});

export const jwtIssuersDecider: Decider<JwtIssuersState, JwtIssuersCommand, JwtIssuersEvent> = {
  initialState: () => ({ issuers: [] }),

  // One command and one event: nothing to switch on.
  decide(cmd) {
    if (cmd.issuers.length > MAX_JWT_ISSUERS_PER_TENANT)
      throw invalid(`issuers: at most ${MAX_JWT_ISSUERS_PER_TENANT} a tenant`);
    const issuers: JwtIssuer[] = cmd.issuers.map((i) => ({
      issuer: i.issuer,
      audience: i.audience,
      jwksUrl: i.jwksUrl ?? null,
      claims: {
        ...JWT_CLAIM_DEFAULTS,
        ...Object.fromEntries(Object.entries(i.claims ?? {}).filter(([, v]) => v !== undefined)),
      },
      defaultPermissions: i.defaultPermissions ? [...new Set(i.defaultPermissions)] : null,
    }));
    if (new Set(issuers.map(pairKey)).size !== issuers.length)
      throw invalid('issuers: the same issuer and audience twice');
    return [{ type: 'JwtIssuersSet', data: { tenantId: cmd.tenantId, accountId: cmd.accountId, issuers } }];
  },

  evolve: (state, e) => (e.type === 'JwtIssuersSet' ? { issuers: e.data.issuers } : state),
};

/** The read model's tenants (an operator route names a tenant by id alone). */
export interface TenantDirectory {
  /** The tenant's account, or null when no account has it. */
  accountOf(tenantId: string): Promise<string | null>;
}
