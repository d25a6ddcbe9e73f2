import {
  ERROR_CATALOGUE,
  type ErrorCode,
  executeScriptBody,
  executeScriptResponse,
  forbidden,
  IDEMPOTENCY_KEY_RE,
  invalid,
  pushScriptBody,
  type RequestMeta,
  route,
  type RouteSpec,
  scriptResponse,
  scriptVersionOf,
  ServiceError,
} from '@svc/contracts';
import { type CommandDeps, grants, scriptView } from '@svc/domain';
import { deleteByIdRoute } from '../by-id-routes';
import {
  type ExecutionRequest,
  KEYED_RESULT_CAP_BYTES,
  NOT_STARTED_CODES,
  NOT_STARTED_RETRY_AFTER_SECONDS,
  RESULT_CAP_BYTES,
  type SandboxScriptExecutor,
} from './executor';
import { type IdempotencyStore, requestHash } from './idempotency';
import { deleteScriptVersion, pushScript, type SourceCheck } from './versions';

/** POST /v1/scripts, DELETE /v1/scripts/{id}, POST /v1/scripts/execute (docs/scripts.md). */
export const MAX_SCRIPT_REQUEST_BYTES = 256 * 1024;

export interface ScriptRouteDeps {
  deps: CommandDeps;
  executor: SandboxScriptExecutor;
  checker: SourceCheck;
  idempotency: IdempotencyStore;
}

const tooLarge = () =>
  new ServiceError('PAYLOAD_TOO_LARGE', `The request body is over ${MAX_SCRIPT_REQUEST_BYTES / 1024} KB`);
const bodyBytes = (header: string | string[] | undefined) => (typeof header === 'string' ? Number(header) : 0);

/** Runs the execution and turns its outcome into a status and body (the idempotency record keeps both). */
async function execute(
  s: ScriptRouteDeps,
  req: ExecutionRequest,
): Promise<{ status: number; body: Record<string, unknown>; headers?: Record<string, string> }> {
  const out = await s.executor.run(req);
  if (out.ok)
    return {
      status: 200,
      body: { result: out.result ?? null, execution: { id: out.executionId, durationMs: out.durationMs } },
    };
  const code = (out.errorCode in ERROR_CATALOGUE ? out.errorCode : 'INTERNAL') as ErrorCode;
  const message = code === 'INTERNAL' ? ERROR_CATALOGUE.INTERNAL.message : out.message;
  return {
    status: ERROR_CATALOGUE[code].status,
    body: {
      message,
      errorCode: code,
      requestId: req.meta.requestId,
      ...(out.details ?? {}),
      execution: { id: out.executionId, durationMs: out.durationMs },
    },
    // A run refused before it started (429, 503 EXECUTION_NOT_STARTED / EXECUTION_CONTAINER_BUSY): when to retry.
    headers: NOT_STARTED_CODES.has(code)
      ? { 'retry-after': String(out.retryAfterSeconds ?? NOT_STARTED_RETRY_AFTER_SECONDS) }
      : undefined,
  };
}

export function scriptCommandRoutes(s: ScriptRouteDeps): RouteSpec[] {
  return [
    route({
      method: 'POST',
      url: '/v1/scripts',
      operationId: 'pushScript',
      auth: 'data',
      permission: 'scripts:c',
      summary:
        'Push an immutable new version of a named script (an ES module whose default export is called with input)',
      body: pushScriptBody,
      response: scriptResponse,
      status: 201,
      write: true,
      errors: [413],
      handler: async ({ body, meta, req }) => {
        if (bodyBytes(req.headers['content-length']) > MAX_SCRIPT_REQUEST_BYTES + 4096) throw tooLarge();
        const v = await pushScript(s.deps, s.checker, body, meta);
        return scriptView(v, grants(meta.principal.allowedActions, 'scripts:r'));
      },
    }),
    deleteByIdRoute({
      url: '/v1/scripts/:id',
      operationId: 'deleteScript',
      permission: 'scripts:d',
      summary: 'Delete one script version',
      versioned: false,
      remove: (id, _expectedVersion, meta) => deleteScriptVersion(s.deps, id, meta),
    }),
    route({
      method: 'POST',
      url: '/v1/scripts/execute',
      operationId: 'executeScript',
      auth: 'data',
      // Some execute permission before the gates and the body (spec: uniform 403 first); the handler checks the name.
      permission: 'scripts:x:*',
      summary: 'Run a script version synchronously as one atomic transaction (needs scripts:x or scripts:x:<name>)',
      body: executeScriptBody,
      response: executeScriptResponse,
      write: true,
      errors: [409, 413, 422, 500, 503, 504],
      handler: async ({ body, meta, req, reply }) => {
        if (bodyBytes(req.headers['content-length']) > MAX_SCRIPT_REQUEST_BYTES) throw tooLarge();
        const p = meta.principal;
        const name = body.scriptRef.name;
        if (!grants(p.allowedActions, `scripts:x:${name}`)) throw forbidden();
        const keyHeader = req.headers['idempotency-key'];
        const key = typeof keyHeader === 'string' ? keyHeader : undefined;
        if (keyHeader !== undefined && (key === undefined || !IDEMPOTENCY_KEY_RE.test(key)))
          throw invalid('Idempotency-Key must be 1-128 characters of letters, digits, ".", "_", ":" and "-"');
        const version = scriptVersionOf(body.scriptRef.version);
        const input = { event: 'execute', userId: p.userId ?? null, params: body.input ?? {} };
        const run = (executionId?: string) =>
          execute(s, {
            meta: meta as RequestMeta,
            script: { name, version },
            input,
            depth: 0,
            resultCapBytes: key ? KEYED_RESULT_CAP_BYTES : RESULT_CAP_BYTES,
            executionId,
          });
        let answer: Awaited<ReturnType<typeof execute>>;
        if (!key) answer = await run();
        else {
          const claim = await s.idempotency.claim(
            p.tenantId!,
            p.contextId!,
            key,
            requestHash({ scriptRef: { name, version: String(body.scriptRef.version) }, input: body.input ?? null }),
            s.deps.ids.newId(),
            meta.now,
            meta.requestId,
          );
          if (claim.kind === 'replay') {
            reply.status(claim.status);
            return claim.body;
          }
          try {
            answer = await run(claim.executionId);
          } catch (e) {
            const body = {
              message: 'The outcome of the script execution could not be determined',
              errorCode: 'EXECUTION_OUTCOME_UNKNOWN',
              requestId: meta.requestId,
              execution: { id: claim.executionId },
            };
            await s.idempotency.complete(p.tenantId!, p.contextId!, key, 500, body).catch(() => undefined);
            s.deps.log?.(`script execution ${claim.executionId}: ${e instanceof Error ? e.message : String(e)}`);
            answer = { status: 500, body };
          }
          // Refused before the script ran (NOT_STARTED_CODES): the key is not spent on it.
          if (NOT_STARTED_CODES.has(String(answer.body.errorCode)))
            await s.idempotency.release(p.tenantId!, p.contextId!, key);
          else await s.idempotency.complete(p.tenantId!, p.contextId!, key, answer.status, answer.body);
        }
        // The activity log records the code of an answered failure as it does for a thrown one.
        if (answer.status !== 200) (req as { errorCode?: string }).errorCode = String(answer.body.errorCode);
        if (answer.headers) reply.headers(answer.headers);
        reply.status(answer.status);
        return answer.body;
      },
    }),
  ];
}
