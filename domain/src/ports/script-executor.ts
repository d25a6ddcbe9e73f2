import type { RequestMeta } from '@svc/contracts';

/**
 * Runs a stored script version in the sandbox as one atomic transaction
 * (decisions §7). The adapter lives in command-api (scripts/); the trigger
 * runner (projectors) reaches it only through this port, wired by deploy.
 */
export interface ScriptRunRequest {
  /** Who runs it: the caller's credential (POST /v1/scripts/execute) or, for a trigger, the rule's grant as a principal. */
  meta: RequestMeta;
  /** The version to run: by id, or by name and version. */
  script: { id: string } | { name: string; version: number };
  input: unknown;
  /** How many trigger firings led here (0 for a direct execution); the adapter stamps it on the writes' events so chained rules can stop loops. */
  depth?: number;
  /** The firing that caused this run (trigger runner): stamped on the committed events so a replay can tell it already ran. */
  cause?: { ruleId: string; eventId: string };
}

export type ScriptRunOutcome =
  | { ok: true; executionId: string; result: unknown; durationMs: number; hostCalls: number; rowsWritten: number }
  | {
      ok: false;
      executionId: string;
      /** The REST errorCode: SCRIPT_ERROR, TIMEOUT, RESOURCE_LIMIT_EXCEEDED, WRITE_BUFFER_CAP_EXCEEDED, AUTHORIZATION_DENIED, CONCURRENT_MODIFICATION, RESULT_TOO_LARGE, NOT_FOUND, INTERNAL, ... */
      errorCode: string;
      message: string;
      durationMs: number;
      /** Deterministic failures (the script's own fault) are terminal; the others may be retried. */
      retryable: boolean;
      details?: Record<string, unknown>;
    };

export interface ScriptExecutor {
  run(req: ScriptRunRequest): Promise<ScriptRunOutcome>;
}
