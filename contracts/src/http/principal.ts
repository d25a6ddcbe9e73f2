/** Who is calling, resolved from the bearer credential by the HTTP edge. */
export interface Principal {
  credentialId: string;
  kind: 'root' | 'scoped' | 'token' | 'developer' | 'operator';
  accountId: string;
  /** Null for developer and operator credentials. */
  tenantId: string | null;
  environment: 'live' | 'test' | null;
  /** The context this request acts in (bound context, or the one a cross-context credential selected). */
  contextId: string | null;
  /** Root keys and cross-context credentials may pick any context of their tenant. */
  crossContext: boolean;
  allowedActions: string[];
  dataScope: { userId?: string; scopes?: string[] } | null;
  /** Identity the credential is bound to: stamped on writes. */
  userId: string | null;
  wireVersionPin: string | null;
  /** Epoch ms after which the credential stops working (minted tokens). */
  expiresAt?: number;
}

/** Metadata of the request that every event it causes carries. */
export interface RequestMeta {
  requestId: string;
  principal: Principal;
  /** The effective time of the command (from the clock port). */
  now: Date;
}
