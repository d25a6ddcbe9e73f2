import type { StoredEvent } from '@svc/domain';
import { documentsProjection } from './documents/read-model';
import { foldersProjection } from './folders/read-model';
import { historyProjection } from './history/read-model';
import { identityProjection } from './identity/read-model';
import { recordsProjection } from './records/read-model';
import type { SqlProjection } from './runtime/runner';
import { schemasProjection } from './schemas/read-model';
import { type RevocationHooks, tenancyProjection } from './tenancy/read-model';
import { triggersProjection } from './triggers/read-model';
import { usageProjection } from './usage/read-model';
import { webhooksProjection } from './webhooks/read-model';

/**
 * The read models the projection runner keeps, one per area (`<area>/read-model.ts`): the one list a capability's
 * projection is added to. Order matters inside a batch: history reads each entity as it was before the event.
 */
export const readModelProjections = (o: {
  revocations?: RevocationHooks;
  onRecordsChanged?: (ids: string[] | null, created: StoredEvent<'RecordCreated'>[]) => void;
  onUsageChange?: (accountId?: string, totals?: ReadonlyMap<string, number>) => void;
}): SqlProjection[] => [
  tenancyProjection(o.revocations),
  historyProjection(),
  schemasProjection(),
  recordsProjection(o.onRecordsChanged),
  foldersProjection(),
  identityProjection(),
  documentsProjection(),
  usageProjection(o.onUsageChange),
  webhooksProjection(),
  triggersProjection(),
];
