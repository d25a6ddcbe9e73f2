import { z } from 'zod';
import { limitParamWithin } from '../http/pagination';

/** The webhook event types of the spec ("Webhook event types"). */
export const WEBHOOK_EVENT_TYPES = [
  'document.indexed',
  'document.failed',
  'record.indexed',
  'record.failed',
  'trigger.failed',
] as const;
export type WebhookEventType = (typeof WEBHOOK_EVENT_TYPES)[number];

/** Payload format of a registration (`apiVersion`) and of the envelope (`version`). */
export const WEBHOOK_API_VERSION = '2024-01';
export const WEBHOOK_API_VERSIONS = [WEBHOOK_API_VERSION] as const;

export const WEBHOOK_DISABLED_REASONS = ['consecutive_failures', 'manual', 'ssrf_blocked'] as const;
export type WebhookDisabledReason = (typeof WEBHOOK_DISABLED_REASONS)[number];

/** Delivery history page size (spec "Size and count limits"): default 50, max 200. */
export const DELIVERY_LIST_LIMIT = { min: 1, max: 200, default: 50 } as const;

/** https only: plain http (and every other scheme) is a 400 (registration rule 1). */
const webhookUrl = z
  .string()
  .max(2048)
  .refine((u) => /^https:\/\//i.test(u), 'url must start with https://');

const eventList = z
  .array(z.enum(WEBHOOK_EVENT_TYPES))
  .min(1, 'events must be a non-empty list')
  .max(WEBHOOK_EVENT_TYPES.length * 4);

export const createWebhookBody = z
  .object({
    tenantId: z.string().min(1).max(128),
    url: webhookUrl,
    events: eventList,
    apiVersion: z.enum(WEBHOOK_API_VERSIONS).optional(),
  })
  .strict();
export type CreateWebhookBody = z.infer<typeof createWebhookBody>;

/** PUT: any of the mutable fields; `status: DISABLED` disables by hand (`disabledReason: manual`). */
export const updateWebhookBody = z
  .object({
    url: webhookUrl.optional(),
    events: eventList.optional(),
    apiVersion: z.enum(WEBHOOK_API_VERSIONS).optional(),
    status: z.enum(['ACTIVE', 'DISABLED']).optional(),
  })
  .strict();
export type UpdateWebhookBody = z.infer<typeof updateWebhookBody>;

export const webhookResponse = z.object({
  id: z.string(),
  url: z.string(),
  domain: z.string(),
  events: z.array(z.string()),
  status: z.enum(['ACTIVE', 'DISABLED']),
  disabledReason: z.enum(WEBHOOK_DISABLED_REASONS).nullable(),
  consecutiveFailures: z.number().int(),
  apiVersion: z.string(),
  tenantId: z.string(),
  createdAt: z.number().int(),
});
export type WebhookResponse = z.infer<typeof webhookResponse>;
/** The create response: the only place the secret is ever shown. */
export const webhookCreatedResponse = webhookResponse.extend({ secret: z.string() });

export const deliveryResponse = z.object({
  id: z.string(),
  webhookId: z.string(),
  eventType: z.string(),
  sourceId: z.string(),
  sourceType: z.string(),
  status: z.enum(['PENDING', 'DELIVERED', 'FAILED']),
  attempts: z.number().int(),
  nextRetryAt: z.string().nullable(),
  createdAt: z.string(),
});
export type DeliveryResponse = z.infer<typeof deliveryResponse>;

export const deliveryLimitParam = limitParamWithin(DELIVERY_LIST_LIMIT);

export const listDeliveriesQuery = z.object({ limit: deliveryLimitParam, startFrom: z.string().optional() });
export const deliveryParams = z.object({ id: z.string().min(1).max(128), deliveryId: z.string().min(1).max(128) });

/** A hostname: lower-case labels, at least two of them (no IP literals: a verified domain is a name). */
export const DOMAIN_RE =
  /^(?=.{1,253}$)([a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)(\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*$/;
const domainName = z
  .string()
  .min(1)
  .max(253)
  .transform((d) => d.trim().toLowerCase().replace(/\.$/, ''))
  .refine((d) => DOMAIN_RE.test(d) && !/^\d+(\.\d+){3}$/.test(d), 'domain must be a hostname');

export const registerDomainBody = z.object({ domain: domainName }).strict();
export const verifyDomainBody = z.object({ accountId: z.string().min(1).max(128), domain: domainName }).strict();
export const domainParam = z.object({ domain: domainName });
export const domainResponse = z.object({ domain: z.string(), verificationToken: z.string(), verified: z.boolean() });
export type DomainResponse = z.infer<typeof domainResponse>;
