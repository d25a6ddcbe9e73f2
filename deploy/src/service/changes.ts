import type { ProjectionRunner } from '@svc/projectors';
import { followCheckpoint, logTailOf, runnerCheckpoint } from '@svc/projectors';
import { ChangeFeed, ChangeResolver } from '@svc/query-api';
import type { Config } from '../config';
import type { ReadCaches } from './caches';
import type { Engines } from './engines';
import { type RoleTraits, servesQueries } from './roles';
import { READ_MODELS } from './checkpoint-names';

/**
 * The change stream's follower of the log (GET /v1/changes), in processes serving reads. It follows the read models'
 * checkpoint: beside the runner (role all) the runner itself, else (role query) the runner's checkpoint row and its
 * notifications. Undefined where no reads are served.
 */
export async function openChangeFeed(o: {
  config: Config;
  role: RoleTraits;
  engines: Engines;
  caches: ReadCaches;
  runner: ProjectionRunner;
  log: (msg: string) => void;
}): Promise<ChangeFeed | undefined> {
  if (!servesQueries(o.role)) return undefined;
  const { sql, store } = o.engines;
  const checkpoint = o.role.projectors ? runnerCheckpoint(o.runner) : await followCheckpoint(sql, READ_MODELS);
  // Beside the runner, the page it just applied is read from the process's shared log reader, not the store again.
  const readHead = o.role.projectors ? logTailOf(store).read : undefined;
  return new ChangeFeed({
    store,
    readHead,
    checkpoint,
    resolver: new ChangeResolver(sql, o.caches.schemas, o.caches.recentRecords, store),
    perContext: o.config.changeStreamsPerContext,
    credentials: o.caches.credentials,
    log: o.log,
  });
}
