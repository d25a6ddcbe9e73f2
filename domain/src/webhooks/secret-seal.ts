import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { InternalError } from '@svc/contracts';

/**
 * The signing secret of a registration enters the log sealed (AES-256-GCM with
 * a key derived from the service secret for this purpose only): the log and
 * its exports never hold it in the clear, and only the dispatcher opens it.
 */
export function sealWebhookSecret(key: Buffer, secretHex: string): string {
  const iv = randomBytes(12);
  const c = createCipheriv('aes-256-gcm', key, iv);
  const body = Buffer.concat([c.update(secretHex, 'utf8'), c.final()]);
  return `v1.${iv.toString('base64url')}.${Buffer.concat([body, c.getAuthTag()]).toString('base64url')}`;
}

export function openWebhookSecret(key: Buffer, sealed: string): string {
  const [v, iv, data] = sealed.split('.');
  if (v !== 'v1' || !iv || !data) throw new InternalError('unknown webhook secret seal');
  const raw = Buffer.from(data, 'base64url');
  const d = createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64url'));
  d.setAuthTag(raw.subarray(raw.length - 16));
  return Buffer.concat([d.update(raw.subarray(0, raw.length - 16)), d.final()]).toString('utf8');
}
