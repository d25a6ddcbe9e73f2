import type { RouteSpec } from '@svc/contracts';
import {
  type BlobStore,
  type EventStore,
  type PriceTable,
  type SearchEngines,
  type Sql,
  storageGrants,
  type CommandDeps,
} from '@svc/domain';
import { type CommandReadPorts, storageRoutes } from '@svc/command-api';
import {
  DocumentWorker,
  sqlFolderContents,
  sqlNamespaceUsage,
  sqlRootKeyIndex,
  sqlTenantContexts,
  sqlTenantDirectory,
  TriggerRunner,
  type TriggerRunnerOptions,
} from '@svc/projectors';
import { traceModel } from './tracing';
import { ModelCatalog, openAiModel, searchBuiltinModel } from '@svc/query-api';
import type { Config } from './config';

// The areas of the API and the read models are listed by their layers: commandAreas (@svc/command-api), queryAreas
// (@svc/query-api), readModelProjections (@svc/projectors). What is left here is the deployment's own wiring.

/**
 * The models this deployment serves: the built-in extractive model (ranking sentences with the search's embedder)
 * and, with LLM_URL, each of LLM_MODELS on that endpoint, the first of them the default; priced by the price
 * table's `inference` section.
 */
export function defaultModels(
  search: SearchEngines | undefined,
  llm: Config['llm'] | undefined,
  prices: PriceTable['inference'],
  traced = false,
): ModelCatalog {
  const builtin = searchBuiltinModel(search, {
    inputCreditsPer1kTokens: prices.builtinInputCreditsPer1kTokens,
    outputCreditsPer1kTokens: prices.builtinOutputCreditsPer1kTokens,
  });
  const remote = (llm?.models ?? []).map((id) =>
    openAiModel({
      url: llm!.url,
      apiKey: llm!.apiKey,
      id,
      contextWindow: llm!.contextWindow,
      stallMs: llm!.stallMs,
      inputCreditsPer1kTokens: prices.llmInputCreditsPer1kTokens,
      outputCreditsPer1kTokens: prices.llmOutputCreditsPer1kTokens,
    }),
  );
  // With traces on (OTEL_EXPORTER_OTLP_ENDPOINT), a span per model call.
  const models = [...remote, builtin].map((m) => (traced ? traceModel(m) : m));
  return new ModelCatalog(models, undefined, prices.centsPerCredit);
}

/** The write path's read-model ports (commandAreas' `ports`), on the projectors' tables in `sql`. */
export const commandReadPorts = (sql: Sql): CommandReadPorts => ({
  rootKeys: sqlRootKeyIndex(sql),
  tenantContexts: sqlTenantContexts(sql),
  tenantDirectory: sqlTenantDirectory(sql),
  folderContents: sqlFolderContents(sql),
  namespaceUsage: sqlNamespaceUsage(sql),
});

/**
 * The embedded storage endpoint behind presigned URLs (`/storage/...`). Its
 * routes read the raw request stream: register them where no body parser runs.
 */
export const storageRouteSpecs = (f: {
  deps: CommandDeps;
  secret: Buffer;
  blobs: BlobStore;
  storageUrlTtlMs?: number;
}): RouteSpec[] => storageRoutes({ deps: f.deps, blobs: f.blobs, grants: storageGrants(f.secret, f.storageUrlTtlMs) });

/**
 * Reactors beside the read models: document extraction, STORED for store-only documents, text discard (own checkpoint).
 */
export const documentWorker = (o: { store: EventStore; sql: Sql; blobs: BlobStore; log?: (msg: string) => void }) =>
  new DocumentWorker(o);

/**
 * The trigger runner (docs/triggers.md): fires rules on record events through the script executor (own checkpoint,
 * 'trigger-runner').
 */
export const triggerRunner = (o: TriggerRunnerOptions) => new TriggerRunner(o);
