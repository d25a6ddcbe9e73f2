import { randomUUID } from 'node:crypto';
import { chmodSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Principal } from '@svc/contracts';
import { type CommandDeps, openAccount } from '@svc/command-api';
import type { Config } from '../config';

const PLANS = ['free', 'starter', 'pro', 'scale', 'enterprise'];

/**
 * The first start of a process that serves the write API on an empty log opens
 * one account (DEFAULT_PLAN, opening inference balance DEFAULT_INFERENCE_BALANCE_CENTS) and writes its keys to DATA_DIR/bootstrap.json
 * (mode 0600); returns that file, or undefined when the log already holds data.
 */
export async function bootstrapFirstAccount(config: Config, deps: CommandDeps, now: () => Date): Promise<string | undefined> {
  if ((await deps.store.headPosition()) !== 0) return undefined;
  const plan = (PLANS.includes(config.defaultPlan) ? config.defaultPlan : 'free') as 'free';
  const system: Principal = { credentialId: 'bootstrap', kind: 'operator', accountId: '', tenantId: null, environment: null, contextId: null, crossContext: true, allowedActions: ['*'], dataScope: null, userId: null, wireVersionPin: null };
  const account = await openAccount(deps, { plan, name: 'bootstrap', inferenceBalanceCents: config.defaultInferenceBalanceCents }, { requestId: randomUUID(), principal: system, now: now() });
  const file = join(config.dataDir, 'bootstrap.json');
  writeFileSync(file, JSON.stringify(account, null, 2) + '\n', { mode: 0o600 });
  chmodSync(file, 0o600);
  return file;
}
