import { deriveKey } from '@svc/contracts';
import type { WebhookCommandDeps } from '@svc/command-api';
import type { Config } from '../config';
import { webhookResolver } from '../engines/webhook-dns';
import type { RoleTraits } from './roles';

/**
 * What the webhook routes and the dispatcher share: where hostnames point, the address policy, the key sealing signing
 * secrets.
 */
export type WebhookSettings = Pick<WebhookCommandDeps, 'resolver' | 'policy' | 'sealKey'>;

export function webhookSettings(
  config: Config,
  role: RoleTraits,
  secret: Buffer,
  log: (msg: string) => void,
): WebhookSettings {
  const policy = { allowPrivate: config.webhooks.allowPrivateTargets };
  if (policy.allowPrivate && role.webhooks)
    log(
      'WARNING: WEBHOOK_ALLOW_PRIVATE_TARGETS=1: webhooks may target loopback and RFC 1918 private ' +
        'addresses (development only)',
    );
  return {
    resolver: webhookResolver(config.webhooks.testDnsFile),
    policy,
    sealKey: deriveKey(secret, 'webhook-secret'),
  };
}
