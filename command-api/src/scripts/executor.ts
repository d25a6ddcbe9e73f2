import { type RequestMeta, ServiceError } from '@svc/contracts';
import {
  type BlobStore,
  type CommandDeps,
  commitStaged,
  type FolderContents,
  type PresignedBlobUrls,
  type ScriptExecutor,
  type ScriptRunOutcome,
  type ScriptRunRequest,
  type ScriptVersion,
  type StorageGrants,
} from '@svc/domain';
import { rootFolderGuard } from '../folders/load';
import { HOST_METHODS, hostDispatcher } from './host-api';
import type { ReadRoutes } from './read-routes';
import { StagedBlobStore } from './staged-blobs';
import type { SandboxLimits, SandboxPool } from './sandbox-pool';
import { StagingEventStore } from './staging-store';
import { MAX_SCRIPT_ROWS, storageRows } from './storage-rows';
import { scriptVersionById, scriptVersionByName } from './versions';
import { withTriggerFiring } from '../triggers/firing-commit';

/**
 * Runs a stored version as one atomic transaction (docs/scripts.md): host calls
 * write to a staging store; a 200 means one multi-stream append committed every
 * staged write, each written stream expected at the revision the execution
 * first read. Every run that started is metered (charged unless the service failed).
 */
export const DEFAULT_SCRIPT_LIMITS: SandboxLimits = {
  timeoutMs: 15_000,
  memoryBytes: 64 * 1024 * 1024,
  stackBytes: 512 * 1024,
  maxHostCalls: 1000,
};
export const MAX_CONCURRENT_PER_CONTEXT = 4;
export const RESULT_CAP_BYTES = 256 * 1024;
export const KEYED_RESULT_CAP_BYTES = 16 * 1024;

/** Failures that are the script's own (terminal for a trigger); the rest may be retried. */
const DETERMINISTIC = new Set([
  'SCRIPT_ERROR',
  'TIMEOUT',
  'RESOURCE_LIMIT_EXCEEDED',
  'WRITE_BUFFER_CAP_EXCEEDED',
  'AUTHORIZATION_DENIED',
  'RESULT_TOO_LARGE',
  'NOT_FOUND',
  'VALIDATION_ERROR',
  'INPUT_TOO_LARGE',
]);
/** Failures attributed to the service: metered, not charged. */
const SERVICE_SIDE = new Set([
  'INTERNAL',
  'EXECUTION_OUTCOME_UNKNOWN',
  'EXECUTION_NOT_STARTED',
  'EXECUTION_CONTAINER_BUSY',
]);

export interface SandboxExecutorOptions {
  deps: CommandDeps;
  pool: SandboxPool;
  limits?: Partial<SandboxLimits>;
  maxConcurrentPerContext?: number;
  /** Document commands (documents.create / update / patch / delete); absent, those host calls are refused. */
  documents?: { blobs: BlobStore; grants: StorageGrants; presigned?: PresignedBlobUrls };
  /** Folder contents on the read models (folders.delete). */
  folderContents?: FolderContents;
  /**
   * Also expect every stream the script only read at the revision it read (default true): an empty append
   * per stream in the commit. Off for an event store that cannot check a stream without writing to it.
   */
  checkReads?: boolean;
}

export type ExecutionRequest = ScriptRunRequest & {
  /** Largest serialised result (256 KB; 16 KB with an Idempotency-Key). */
  resultCapBytes?: number;
  /** An id chosen by the caller (the idempotency record holds it before the run). */
  executionId?: string;
};

const entityIdOf = (streamId: string) => streamId.replace(/^(record|document|folder)-/, '');

/**
 * Runs refused before they started: the caller may retry after `Retry-After` (spec "Errors": 429, and 503
 * EXECUTION_NOT_STARTED / EXECUTION_CONTAINER_BUSY).
 */
export const NOT_STARTED_CODES: ReadonlySet<string> = new Set([
  'RATE_LIMITED',
  'EXECUTION_NOT_STARTED',
  'EXECUTION_CONTAINER_BUSY',
]);
/** `Retry-After` of a run that did not start when the refusal names none (a queued job settled as the pool closes). */
export const NOT_STARTED_RETRY_AFTER_SECONDS = 2;

/** The Retry-After a refusal carries (its header), else the default for a run that did not start. */
function retryAfterOf(code: string, headers?: Record<string, string>): number | undefined {
  const named = Number(headers?.['retry-after']);
  if (Number.isFinite(named) && named > 0) return named;
  return NOT_STARTED_CODES.has(code) ? NOT_STARTED_RETRY_AFTER_SECONDS : undefined;
}

export class SandboxScriptExecutor implements ScriptExecutor {
  readonly limits: SandboxLimits;
  /**
   * The REST read routes of this process (records.list / lookup, documents.list, folders.list): set once the routes
   * exist.
   */
  reads?: ReadRoutes;
  private readonly running = new Map<string, number>();

  constructor(private readonly o: SandboxExecutorOptions) {
    this.limits = { ...DEFAULT_SCRIPT_LIMITS, ...o.limits };
  }

  private async resolve(meta: RequestMeta, ref: ScriptRunRequest['script']): Promise<ScriptVersion | null> {
    if ('id' in ref) return (await scriptVersionById(this.o.deps.store, meta, ref.id))?.version ?? null;
    return scriptVersionByName(this.o.deps.store, meta, ref.name, ref.version);
  }

  /** Takes one of the context's execution slots; a 429 (Retry-After: 2) when they are all in use. */
  private acquire(meta: RequestMeta): () => void {
    const key = `${meta.principal.tenantId}\u0000${meta.principal.contextId}`;
    const n = this.running.get(key) ?? 0;
    if (n >= (this.o.maxConcurrentPerContext ?? MAX_CONCURRENT_PER_CONTEXT))
      throw new ServiceError('RATE_LIMITED', 'Too many concurrent script executions in this app context', {
        headers: { 'retry-after': '2' },
      });
    this.running.set(key, n + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = (this.running.get(key) ?? 1) - 1;
      if (left > 0) this.running.set(key, left);
      else this.running.delete(key);
    };
  }

  async run(req: ExecutionRequest): Promise<ScriptRunOutcome> {
    const executionId = req.executionId ?? this.o.deps.ids.newId();
    const failed = (
      errorCode: string,
      message: string,
      durationMs = 0,
      details?: Record<string, unknown>,
      headers?: Record<string, string>,
    ): ScriptRunOutcome => {
      const retryAfterSeconds = retryAfterOf(errorCode, headers);
      return {
        ok: false,
        executionId,
        errorCode,
        message,
        durationMs,
        retryable: !DETERMINISTIC.has(errorCode),
        ...(details ? { details } : {}),
        ...(retryAfterSeconds !== undefined ? { retryAfterSeconds } : {}),
      };
    };
    let release: () => void;
    try {
      release = this.acquire(req.meta);
    } catch (e) {
      if (e instanceof ServiceError) return failed(e.code, e.message, 0, e.details, e.headers);
      throw e;
    }
    try {
      const script = await this.resolve(req.meta, req.script);
      if (!script) return failed('NOT_FOUND', 'No such script version');
      const outcome = await this.execute(req, script, executionId, failed);
      if (outcome.errorCode !== 'EXECUTION_CONTAINER_BUSY' && outcome.errorCode !== 'EXECUTION_NOT_STARTED') {
        await this.o.deps.meter
          ?.scriptExecution(req.meta, {
            executions: 1,
            totalMillis: Math.round(outcome.durationMs),
            charged: outcome.ok || !SERVICE_SIDE.has(outcome.errorCode),
          })
          .catch((e: unknown) =>
            this.o.deps.log?.(
              `usage: metering a script execution failed: ${e instanceof Error ? e.message : String(e)}`,
            ),
          );
      }
      return outcome.result;
    } finally {
      release();
    }
  }

  private async execute(
    req: ExecutionRequest,
    script: ScriptVersion,
    executionId: string,
    failed: (
      code: string,
      message: string,
      durationMs?: number,
      details?: Record<string, unknown>,
      headers?: Record<string, string>,
    ) => ScriptRunOutcome,
  ): Promise<{ ok: boolean; errorCode: string; durationMs: number; result: ScriptRunOutcome }> {
    const wrap = (result: ScriptRunOutcome) => ({
      ok: result.ok,
      errorCode: result.ok ? '' : result.errorCode,
      durationMs: result.durationMs,
      result,
    });
    const staging = new StagingEventStore(this.o.deps.store);
    const deps: CommandDeps = { ...this.o.deps, store: staging, barrier: { waitFor: async () => true } };
    const blobs = this.o.documents ? new StagedBlobStore(this.o.documents.blobs) : undefined;
    const documents =
      this.o.documents && blobs
        ? {
            deps,
            sealer: deps.sealer,
            blobs,
            grants: this.o.documents.grants,
            presigned: this.o.documents.presigned,
            ensureRoot: rootFolderGuard(deps),
          }
        : undefined;
    const call = hostDispatcher({
      deps,
      staging,
      meta: req.meta,
      documents,
      folderContents: this.o.folderContents,
      reads: this.reads,
    });
    const onCall = async (obj: string, method: string, args: string) => {
      const out = await call(obj, method, args);
      const total = await storageRows(staging, staging.stagedStreams());
      if (total > MAX_SCRIPT_ROWS)
        throw new ServiceError(
          'WRITE_BUFFER_CAP_EXCEEDED',
          `The script's transaction is over ${MAX_SCRIPT_ROWS} storage rows`,
          { details: { total, limit: MAX_SCRIPT_ROWS } },
        );
      return out;
    };
    let answer;
    try {
      answer = await this.o.pool.run(script.source, JSON.stringify(req.input ?? {}), this.limits, {
        methods: HOST_METHODS,
        call: onCall,
      });
    } catch (e) {
      await blobs?.settle(false);
      // The pool's refusals (EXECUTION_CONTAINER_BUSY, EXECUTION_NOT_STARTED) keep their Retry-After.
      if (e instanceof ServiceError) return wrap(failed(e.code, e.message, 0, e.details, e.headers));
      throw e;
    }
    const outcome = await this.commit(req, staging, answer, executionId, failed);
    // After an undeterminable commit the new blobs may be referenced: they stay (at worst unreferenced).
    if (outcome.ok || outcome.errorCode !== 'EXECUTION_OUTCOME_UNKNOWN') await blobs?.settle(outcome.ok);
    return wrap(outcome);
  }

  private async commit(
    req: ExecutionRequest,
    staging: StagingEventStore,
    answer: Awaited<ReturnType<SandboxPool['run']>>,
    executionId: string,
    failed: (code: string, message: string, durationMs?: number, details?: Record<string, unknown>) => ScriptRunOutcome,
  ): Promise<ScriptRunOutcome> {
    const durationMs = answer.durationMs;
    if (!answer.ok) return failed(answer.errorCode, answer.message, durationMs, answer.details);
    const cap = req.resultCapBytes ?? RESULT_CAP_BYTES;
    const bytes = answer.json === undefined ? 0 : Buffer.byteLength(answer.json, 'utf8');
    if (bytes > cap)
      return failed('RESULT_TOO_LARGE', `The script's result is ${bytes} bytes, over the ${cap}-byte cap`, durationMs, {
        total: bytes,
        limit: cap,
      });
    const result = answer.json === undefined ? null : (JSON.parse(answer.json) as unknown);
    // Trigger firings (docs/triggers.md): depth stamped on the writes, the firing's marker committed with them.
    const requests = withTriggerFiring(staging.commitRequests(this.o.checkReads ?? true), req);
    let rowsWritten = 0;
    if (requests.length) {
      rowsWritten = await storageRows(staging, staging.stagedStreams());
      let committed: Awaited<ReturnType<typeof commitStaged>>;
      try {
        // The script's writes were decided through the command handler on the staging store; the handler commits them.
        committed = await commitStaged(this.o.deps, requests);
      } catch (e) {
        this.o.deps.log?.(
          `script execution ${executionId}: commit failed: ${e instanceof Error ? e.message : String(e)}`,
        );
        return failed(
          'EXECUTION_OUTCOME_UNKNOWN',
          'The outcome of the script execution could not be determined',
          durationMs,
        );
      }
      if ('conflict' in committed) {
        const entities = requests.map((r) => r.streamId).filter((s) => /^(record|document|folder)-/.test(s));
        const ids = /^(record|document|folder)-/.test(committed.conflict)
          ? [entityIdOf(committed.conflict)]
          : entities.map(entityIdOf);
        return failed(
          'CONCURRENT_MODIFICATION',
          `Data the script read or wrote changed while it ran; re-read ${ids.join(', ')} and retry`,
          durationMs,
          { ids },
        );
      }
    }
    return { ok: true, executionId, result, durationMs, hostCalls: answer.hostCalls, rowsWritten };
  }
}
