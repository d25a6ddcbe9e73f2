import type { EventMetadata } from '@svc/contracts';
import type { UsageItem } from '../usage/charges';
import type { PriceTable } from '../usage/prices';
import type { DomainAppend } from '../write/appends';
import type { UsageCharges } from './usage-charges';

/**
 * The charges port of the write path (docs/api.md "Usage"): what a command adds to its commit to charge it.
 * command-api's UsageMeter implements it; the command handler and the deciders' callers see only this.
 */
export interface WriteCharges extends UsageCharges {
  readonly prices: PriceTable;
  /**
   * The append that charges `items` to a tenant (a UsageMetered event), atomic with the write it charges; empty when
   * off.
   */
  appendFor(
    metadata: EventMetadata,
    items: UsageItem[],
    where?: { tenantId: string | null; contextId: string | null },
  ): DomainAppend[];
  /** The charge carried in the metadata of the write's first event; empty when off. */
  writeCharge(metadata: EventMetadata, items: UsageItem[] | (() => UsageItem[])): DomainAppend[];
}
