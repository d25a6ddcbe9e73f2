/**
 * The read-your-writes barrier a write's response waits on: resolves true once
 * the read models have applied the log up to `position`, false after
 * `timeoutMs`. Adapters (projectors/src/runtime/runner.ts): in one process it
 * watches the projection runner; in a command-only process it follows the
 * checkpoint table (notifications, with polling as the fallback).
 */
export interface ReadModelBarrier {
  waitFor(position: number, timeoutMs?: number): Promise<boolean>;
}
