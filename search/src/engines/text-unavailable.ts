import { TextIndexError } from '@svc/domain';

/**
 * A keyword-index failure that is the engine's, not the item's: the server does not answer or refuses for now
 * (connection refused or reset, a timeout, 429, 502-504, a cluster block), or its index is gone (`missing`: a
 * server restarted empty). The search projector retries such a batch until the engine is back without counting
 * attempts, so items are never marked TEXT_INDEX_FAILED for it; a missing index is created again and rebuilt from
 * the log (indexer.ts, docs/search.md "Elasticsearch"). Queries see an ordinary TextIndexError (a degraded leg).
 */
export class TextIndexUnavailable extends TextIndexError {
  constructor(
    message: string,
    cause?: unknown,
    readonly missing = false,
  ) {
    super(message, cause);
    this.name = 'TextIndexUnavailable';
  }
}
