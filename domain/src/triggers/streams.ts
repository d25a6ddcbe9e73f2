import { createHash } from 'node:crypto';

/** Streams of the triggers feature (docs/triggers.md "Events"). */
export const triggerStreams = {
  /** One rule: TriggerRuleCreated, TriggerRuleDeleted. */
  rule: (ruleId: string) => `trigger-${ruleId}`,
  /** The live rules of one schema (TriggerRuleBound / TriggerRuleUnbound): what schema updates and deletes check. */
  bindings: (schemaId: string) => `trigger-bindings-${schemaId}`,
  /**
   * One firing of a rule on one log event: claimed once, by TriggerFired or TriggerFailed, with expected `no_stream`.
   */
  firing: (ruleId: string, eventId: string) =>
    `trigger-firing-${createHash('sha256').update(`${ruleId}\u0000${eventId}`).digest('hex').slice(0, 40)}`,
};
