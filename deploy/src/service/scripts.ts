import { IdempotencyStore, type ScriptRouteDeps, SandboxPool, SandboxScriptExecutor } from '@svc/command-api';
import { type CommandDeps, storageGrants } from '@svc/domain';
import { sqlFolderContents } from '@svc/projectors';
import type { Config } from '../config';
import type { Engines } from './engines';
import type { RoleTraits } from './roles';

/**
 * Scripts (docs/scripts.md): sandbox threads started on first use, the executor (also the trigger runner's),
 * Idempotency-Key records.
 */
export interface Scripts {
  pool: SandboxPool;
  executor: SandboxScriptExecutor;
  /** What the script routes need (POST /v1/scripts/execute, source checks). */
  routes: Omit<ScriptRouteDeps, 'deps'>;
}

export function openScripts(
  config: Config,
  role: RoleTraits,
  engines: Engines,
  deps: CommandDeps,
): Scripts | undefined {
  if (!role.scripts) return undefined;
  const pool = new SandboxPool({ threads: config.scripts.threads });
  const executor = new SandboxScriptExecutor({
    deps,
    pool,
    limits: { timeoutMs: config.scripts.timeoutMs },
    documents: {
      blobs: engines.blobs,
      grants: storageGrants(engines.secret, config.uploadUrlTtlSeconds * 1000),
      presigned: engines.s3,
    },
    folderContents: sqlFolderContents(engines.sql),
    // KurrentDB: only written streams are expected at their revision (an empty append is no check there).
    checkReads: !config.eventStoreUrl,
  });
  return {
    pool,
    executor,
    routes: {
      executor,
      checker: pool,
      idempotency: new IdempotencyStore(engines.sql, config.scripts.timeoutMs + 60_000),
    },
  };
}
