import { z } from 'zod';
import { identifier, listEnvelope } from '../common';
import { limitParam } from '../http/pagination';
import { scriptVersionRef } from './scripts';

/** Trigger rules and their failures (docs/triggers.md; decisions §4, §7). */
export const TRIGGER_EVENTS = ['CREATE', 'UPDATE', 'DELETE'] as const;
export type TriggerEventKind = (typeof TRIGGER_EVENTS)[number];

/**
 * The script a rule runs: one pushed version by number (a number or its decimal string), or `latest`, the
 * newest live version resolved at each firing (docs/triggers.md "Script versions").
 */
export const triggerScriptRef = z.object({ name: identifier, version: scriptVersionRef });
/** As responses show it: the number (a decimal string was declared as that number), or `latest` as declared. */
export const triggerScriptRefView = z.object({
  name: z.string(),
  version: z.union([z.number().int(), z.literal('latest')]),
});

/**
 * A data scope of a grant: literal values, or `${{ input.userId }}` / `${{ input.scope.<ns> }}` placeholders resolved
 * per firing.
 */
export const triggerDataScope = z.object({
  userId: z.string().min(1).max(256).optional(),
  scopes: z.array(z.string().min(1).max(320)).max(2).optional(),
});

export const triggerGrant = z.object({
  /** Ordinary permission strings (`records:r`, `records:c:invoice`, ...). */
  allowedActions: z.array(z.string().min(1).max(140)).min(1).max(50),
  dataScope: triggerDataScope.optional(),
});

export const createTriggerBody = z.object({
  name: identifier,
  schemaId: z.string().min(1).max(128),
  events: z.array(z.enum(TRIGGER_EVENTS)).min(1).max(3),
  scriptRef: triggerScriptRef,
  /** Required: `[]` projects nothing beyond identity. */
  fields: z.array(z.string().min(1).max(64)).max(100),
  grant: triggerGrant,
  enabled: z.boolean().optional(),
});
export type CreateTrigger = z.infer<typeof createTriggerBody>;

export const triggerResponse = z.object({
  id: z.string(),
  name: z.string(),
  schemaId: z.string(),
  typeName: z.string(),
  events: z.array(z.enum(TRIGGER_EVENTS)),
  scriptRef: triggerScriptRefView,
  fields: z.array(z.string()),
  grant: z.object({ allowedActions: z.array(z.string()), dataScope: triggerDataScope.nullable() }),
  enabled: z.boolean(),
  createdAt: z.string(),
});
export type TriggerResponse = z.infer<typeof triggerResponse>;
export const triggerListResponse = listEnvelope(triggerResponse);
export const listTriggersQuery = z.object({
  schemaId: z.string().min(1).max(128).optional(),
  startFrom: z.string().optional(),
  limit: limitParam,
});

/** A terminal trigger failure (decisions §4). `reason` is an errorCode. */
export const triggerFailureResponse = z.object({
  id: z.string(),
  ruleId: z.string(),
  scriptRef: triggerScriptRefView,
  recordId: z.string(),
  event: z.enum(TRIGGER_EVENTS),
  reason: z.string(),
  message: z.string(),
  attempts: z.number().int(),
  firstFailedAt: z.string(),
  lastFailedAt: z.string(),
});
export type TriggerFailureResponse = z.infer<typeof triggerFailureResponse>;
export const triggerFailureListResponse = listEnvelope(triggerFailureResponse);
export const listTriggerFailuresQuery = z.object({
  ruleId: z.string().min(1).max(128).optional(),
  startFrom: z.string().optional(),
  limit: limitParam,
});
