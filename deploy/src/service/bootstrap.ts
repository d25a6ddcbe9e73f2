import { createHmac, randomUUID } from 'node:crypto';
import { chmodSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Principal } from '@svc/contracts';
import type { CommandDeps } from '@svc/domain';
import { openAccount } from '@svc/command-api';
import type { Config } from '../config';
import { loadSecret } from './secret';

const PLANS = ['free', 'starter', 'pro', 'scale', 'enterprise'];

/**
 * The first account's id: derived from the service secret, so every process of one deployment (they share
 * SERVICE_SECRET) agrees on it without coordination, and two deployments (or test services sharing a Redis)
 * do not (UUID layout, version 8, as the context root folders' ids).
 */
export function firstAccountId(secret: Buffer): string {
  const h = createHmac('sha256', secret).update('first-account\u0000v1').digest('hex');
  const variant = ((parseInt(h[16], 16) & 0x3) | 0x8).toString(16);
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-8${h.slice(13, 16)}-${variant}${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

/**
 * The first start of a process that serves the write API on an empty log opens
 * one account (DEFAULT_PLAN, opening inference balance DEFAULT_INFERENCE_BALANCE_CENTS) and writes its keys to
 * DATA_DIR/bootstrap.json (mode 0600); returns that file, or undefined when the log already holds data.
 *
 * Several command processes may start at once on the same empty log (the Kubernetes manifest runs two):
 * each sees an empty log, and each tries. The account's id is the same in all of them (`firstAccountId`) and
 * its stream is appended with expected revision `no_stream` in the one atomic append that writes the whole
 * account (contexts, root folders, credentials): the event store lets exactly one win, on PostgreSQL and on
 * KurrentDB alike. The others write nothing, leave bootstrap.json to the winner, and start normally.
 */
export async function bootstrapFirstAccount(
  config: Config,
  deps: CommandDeps,
  now: () => Date,
): Promise<string | undefined> {
  if ((await deps.store.headPosition()) !== 0) return undefined;
  const plan = (PLANS.includes(config.defaultPlan) ? config.defaultPlan : 'free') as 'free';
  const system: Principal = {
    credentialId: 'bootstrap',
    kind: 'operator',
    accountId: '',
    tenantId: null,
    environment: null,
    contextId: null,
    crossContext: true,
    allowedActions: ['*'],
    dataScope: null,
    userId: null,
    wireVersionPin: null,
  };
  // The key in use (SERVICE_SECRET, or the key file openEngines made or read before anything was appended).
  const accountId = firstAccountId(loadSecret(config, true));
  // openAccount takes the account's id first; every later id (tenants, contexts, credentials, events) is fresh.
  let first = true;
  const ids = { newId: () => (first ? ((first = false), accountId) : deps.ids.newId()) };
  const account = await openAccount(
    { ...deps, ids },
    { plan, name: 'bootstrap', inferenceBalanceCents: config.defaultInferenceBalanceCents },
    { requestId: randomUUID(), principal: system, now: now() },
    { ifNew: true },
  );
  if (!account) {
    deps.log?.(
      `first account ${accountId} was opened by another process starting at the same time: its keys are ` +
        `in that process's ${join(config.dataDir, 'bootstrap.json')}`,
    );
    return undefined;
  }
  if (account.accountId !== accountId)
    throw new Error(
      `bootstrap: the first account was opened as ${account.accountId}, not ${accountId} (openAccount no ` +
        `longer takes its id first; concurrent command starts are unguarded)`,
    );
  // Written whole or not at all (a reader never sees half a file), readable by this user only.
  const file = join(config.dataDir, 'bootstrap.json');
  const tmp = `${file}.tmp-${process.pid}`;
  try {
    writeFileSync(tmp, JSON.stringify(account, null, 2) + '\n', { mode: 0o600 });
    chmodSync(tmp, 0o600);
    renameSync(tmp, file);
  } finally {
    rmSync(tmp, { force: true });
  }
  return file;
}
