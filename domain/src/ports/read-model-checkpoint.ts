/**
 * How far the read models have applied the log, as a follower of the change stream sees it (GET /v1/changes): an
 * event is announced only once a GET would show it. Adapters (projectors/src/runtime/checkpoint-follower.ts): in one
 * process the projection runner itself; in a query-only process the runner's row of the checkpoint table
 * (notifications, with polling as the fallback).
 */
export interface ReadModelCheckpoint {
  /** The position up to which the read models have applied the log. */
  position(): Promise<number>;
  /** Calls `listener` whenever that position may have moved; returns the unsubscribe. */
  onAdvance(listener: () => void): () => void;
  close(): Promise<void>;
}
