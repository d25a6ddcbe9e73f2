import { WEBHOOK_API_VERSION, type WebhookEventType } from '@svc/contracts';

/** The body delivered to the endpoint (spec "Event envelope"). Its JSON text is what gets signed. */
export interface WebhookEnvelope {
  id: string;
  version: string;
  type: WebhookEventType;
  created: number;
  tenantId: string;
  livemode: boolean;
  data: Record<string, unknown>;
}

export const buildEnvelope = (o: {
  id: string;
  type: WebhookEventType;
  createdMs: number;
  tenantId: string;
  livemode: boolean;
  data: Record<string, unknown>;
}): WebhookEnvelope => ({
  id: o.id,
  version: WEBHOOK_API_VERSION,
  type: o.type,
  created: Math.floor(o.createdMs / 1000),
  tenantId: o.tenantId,
  livemode: o.livemode,
  data: o.data,
});

/** The optional fields of event `data` that are present (set, and not an empty list), in the order named. */
function presentFields<T extends object>(x: T, keys: readonly (keyof T & string)[]): Record<string, unknown> {
  const present = (v: unknown) => (Array.isArray(v) ? v.length > 0 : Boolean(v));
  return Object.fromEntries(keys.filter((k) => present(x[k])).map((k) => [k, x[k]]));
}

/**
 * `data` of `record.*`: id, typeName, indexStatus; userId and scopes when present; indexFailure on failures when
 * classified.
 */
export function recordData(r: {
  id: string;
  typeName: string;
  indexStatus: string;
  userId?: string | null;
  scopes?: string[];
  indexFailure?: { code: string; message: string };
}): Record<string, unknown> {
  return {
    id: r.id,
    typeName: r.typeName,
    indexStatus: r.indexStatus,
    ...presentFields(r, ['userId', 'scopes', 'indexFailure']),
  };
}

/** `data` of `document.*`: id, status, indexMode; userId, scopes, folderId when present. Never the title. */
export function documentData(d: {
  id: string;
  status: string;
  indexMode: string;
  userId?: string | null;
  scopes?: string[];
  folderId?: string | null;
  indexFailure?: { code: string; message: string };
}): Record<string, unknown> {
  return {
    id: d.id,
    status: d.status,
    indexMode: d.indexMode,
    ...presentFields(d, ['userId', 'scopes', 'folderId', 'indexFailure']),
  };
}
