// The triggers read model's names (docs/architecture.md "Projections"): the projectors create and write these tables,
// the query API reads them; SQL elsewhere interpolates these names instead of spelling them.

/** Trigger rules and their failures. */
export const TRIGGER_TABLES = Object.freeze({
  rules: 'rm_trigger_rules',
  failures: 'rm_trigger_failures',
} as const);

/** The indexes of those tables. */
export const TRIGGER_INDEXES = Object.freeze({
  triggerRulesSchema: 'rm_trigger_rules_schema',
  triggerRulesList: 'rm_trigger_rules_list',
  triggerFailuresList: 'rm_trigger_failures_list',
} as const);
