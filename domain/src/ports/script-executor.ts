import type { RequestMeta } from '@svc/contracts';
import type { AppendRequest } from './event-store';

/**
 * Runs a stored script version in the sandbox as one atomic transaction
 * (decisions §7). The adapter lives in command-api (scripts/); the trigger
 * runner (projectors) reaches it only through this port, wired by deploy.
 */
export interface ScriptRunRequest {
  /**
   * Who runs it: the caller's credential (POST /v1/scripts/execute) or, for a trigger, the rule's grant as a principal.
   */
  meta: RequestMeta;
  /** The version to run: by id, or by name and version. */
  script: { id: string } | { name: string; version: number | 'latest' };
  input: unknown;
  /**
   * How many trigger firings led here (0 for a direct execution); the adapter stamps it on the writes' events so
   * chained rules can stop loops.
   */
  depth?: number;
  /**
   * The firing that caused this run (trigger runner): stamped on the committed events so a replay can tell it already
   * ran.
   */
  cause?: { ruleId: string; eventId: string };
  /**
   * Trigger runner: appends committed in the same atomic multi-stream append as the script's writes, also when
   * the script wrote nothing (the firing's marker, expected `no_stream`: a replay finds it and never runs the
   * firing again). A conflict on one of them is reported like any other: CONCURRENT_MODIFICATION.
   */
  alsoAppend?: AppendRequest[];
}

export type ScriptRunOutcome =
  | { ok: true; executionId: string; result: unknown; durationMs: number; hostCalls: number; rowsWritten: number }
  | {
      ok: false;
      executionId: string;
      /**
       * The REST errorCode: SCRIPT_ERROR, TIMEOUT, RESOURCE_LIMIT_EXCEEDED, WRITE_BUFFER_CAP_EXCEEDED,
       * AUTHORIZATION_DENIED, CONCURRENT_MODIFICATION, RESULT_TOO_LARGE, NOT_FOUND, INTERNAL, ...
       */
      errorCode: string;
      message: string;
      durationMs: number;
      /** Deterministic failures (the script's own fault) are terminal; the others may be retried. */
      retryable: boolean;
      details?: Record<string, unknown>;
      /**
       * A run refused before it started (RATE_LIMITED, EXECUTION_NOT_STARTED, EXECUTION_CONTAINER_BUSY): seconds to
       * wait (`Retry-After`).
       */
      retryAfterSeconds?: number;
    };

export interface ScriptExecutor {
  run(req: ScriptRunRequest): Promise<ScriptRunOutcome>;
}
