import { describe, expect, it } from 'vitest';
import { type CreateTrigger, type Principal, type SchemaDefinition, ServiceError } from '@svc/contracts';
import { checkSchemaDeleteAgainstRules, checkSchemaUpdateAgainstRules, triggerBindingsAggregate } from './bindings';
import { decideCreateRule, decideDeleteRule, projectableFields, triggerRuleAggregate, validateRuleDeclaration } from './rule';

const def: SchemaDefinition = {
  typeName: 'invoice',
  displayName: 'Invoice',
  allowedSurfaces: ['record'],
  capabilities: { triggersEnabled: true },
  fields: [
    { fieldId: 'amount', fieldType: 'number', inline: true },
    { fieldId: 'status', fieldType: 'string', filterable: true },
    { fieldId: 'ref', fieldType: 'string' },
    { fieldId: 'notes', fieldType: 'string' },
    { fieldId: 'ssn', fieldType: 'string', sensitive: true },
  ],
  lookupFields: ['ref'],
} as SchemaDefinition;

const root: Principal = {
  credentialId: 'k', kind: 'root', accountId: 'a', tenantId: 't', environment: 'live', contextId: 'c', crossContext: true,
  allowedActions: ['*'], dataScope: null, userId: null, wireVersionPin: null,
};
const body = (over: Partial<CreateTrigger> = {}): CreateTrigger => ({
  name: 'audit', schemaId: 's1', events: ['CREATE', 'UPDATE'], scriptRef: { name: 'audit', version: 1 }, fields: ['amount', 'status'],
  grant: { allowedActions: ['records:r', 'records:c'] }, ...over,
});
const ctx = (over: Partial<Parameters<typeof validateRuleDeclaration>[1]> = {}) => ({ principal: root, schema: { id: 's1', definition: def }, scriptExists: true, ...over });
const codeOf = (fn: () => unknown) => {
  try {
    fn();
  } catch (e) {
    return e instanceof ServiceError ? { code: e.code, details: e.details, message: e.message } : { code: 'THROWN', details: undefined, message: String(e) };
  }
  return { code: 'OK', details: undefined, message: '' };
};

describe('trigger rule declaration', () => {
  it('projects inline, filterable and lookup fields, never sensitive ones', () => {
    expect(projectableFields(def)).toEqual(['amount', 'status', 'ref']);
  });

  it('accepts a rule within the rules', () => {
    expect(codeOf(() => validateRuleDeclaration(body(), ctx())).code).toBe('OK');
    expect(codeOf(() => validateRuleDeclaration(body({ fields: ['ref'], grant: { allowedActions: ['records:r:invoice'], dataScope: { userId: '${{ input.userId }}', scopes: ['${{ input.scope.team }}'] } } }), ctx())).code).toBe('OK');
  });

  it('refuses unprojectable fields with 400 listing the projectable ones', () => {
    for (const f of ['notes', 'ssn', 'nope']) {
      const r = codeOf(() => validateRuleDeclaration(body({ fields: [f] }), ctx()));
      expect(r.code).toBe('VALIDATION_ERROR');
      expect(r.details).toEqual({ projectableFields: ['amount', 'status', 'ref'] });
    }
  });

  it('refuses a schema without triggersEnabled (400), a missing schema or script (404)', () => {
    expect(codeOf(() => validateRuleDeclaration(body(), ctx({ schema: { id: 's1', definition: { ...def, capabilities: {} } } }))).code).toBe('VALIDATION_ERROR');
    expect(codeOf(() => validateRuleDeclaration(body(), ctx({ schema: null }))).code).toBe('NOT_FOUND');
    expect(codeOf(() => validateRuleDeclaration(body(), ctx({ scriptExists: false }))).code).toBe('NOT_FOUND');
  });

  it('needs records:r on the type when fields are declared, and no literal data scope', () => {
    expect(codeOf(() => validateRuleDeclaration(body({ grant: { allowedActions: ['records:c'] } }), ctx())).code).toBe('VALIDATION_ERROR');
    expect(codeOf(() => validateRuleDeclaration(body({ grant: { allowedActions: ['records:r:other'] } }), ctx())).code).toBe('VALIDATION_ERROR');
    expect(codeOf(() => validateRuleDeclaration(body({ grant: { allowedActions: ['records:r'], dataScope: { userId: 'u-1' } } }), ctx())).code).toBe('VALIDATION_ERROR');
    expect(codeOf(() => validateRuleDeclaration(body({ grant: { allowedActions: ['records:r'], dataScope: { scopes: ['team:a'] } } }), ctx())).code).toBe('VALIDATION_ERROR');
    // fields: [] projects nothing: no read clause needed, a literal scope allowed
    expect(codeOf(() => validateRuleDeclaration(body({ fields: [], grant: { allowedActions: ['records:c'], dataScope: { userId: 'u-1' } } }), ctx())).code).toBe('OK');
  });

  it('refuses malformed permissions and placeholders, duplicate events, and a grant wider than the caller', () => {
    expect(codeOf(() => validateRuleDeclaration(body({ grant: { allowedActions: ['records:r', 'bad perm'] } }), ctx())).code).toBe('VALIDATION_ERROR');
    expect(codeOf(() => validateRuleDeclaration(body({ grant: { allowedActions: ['records:r'], dataScope: { userId: '${{ input.secret }}' } } }), ctx())).code).toBe('VALIDATION_ERROR');
    expect(codeOf(() => validateRuleDeclaration(body({ events: ['CREATE', 'CREATE'] }), ctx())).code).toBe('VALIDATION_ERROR');
    const scoped = { ...root, kind: 'scoped' as const, allowedActions: ['triggers:c', 'records:r'] };
    expect(codeOf(() => validateRuleDeclaration(body(), ctx({ principal: scoped }))).code).toBe('FORBIDDEN');
  });

  it('folds created and deleted rules', () => {
    const created = decideCreateRule('r1', body(), 'invoice');
    const s = created.reduce((st, e) => triggerRuleAggregate.evolve(st, e, { tenantId: 't', contextId: 'c', occurredAt: 'now' } as never), triggerRuleAggregate.initialState());
    expect(s).toMatchObject({ exists: true, id: 'r1', enabled: true, typeName: 'invoice', grant: { dataScope: null } });
    expect(decideDeleteRule(s)).toEqual([{ type: 'TriggerRuleDeleted', data: { ruleId: 'r1', schemaId: 's1' } }]);
    expect(codeOf(() => decideDeleteRule({ exists: false })).code).toBe('NOT_FOUND');
  });
});

describe('schema changes while rules fire', () => {
  const bindings = [
    { type: 'TriggerRuleBound' as const, data: { ruleId: 'r1', schemaId: 's1', fields: ['amount'], enabled: true } },
    { type: 'TriggerRuleBound' as const, data: { ruleId: 'r2', schemaId: 's1', fields: [], enabled: true } },
  ].reduce((s, e) => triggerBindingsAggregate.evolve(s, e), triggerBindingsAggregate.initialState());

  it('409 when a projected field stops being inline (or goes), or triggersEnabled goes off', () => {
    const notInline = { ...def, fields: def.fields!.map((f) => (f.fieldId === 'amount' ? { ...f, inline: false } : f)) };
    expect(codeOf(() => checkSchemaUpdateAgainstRules(bindings, notInline))).toMatchObject({ code: 'CONFLICT', details: { ruleIds: ['r1'] } });
    expect(codeOf(() => checkSchemaUpdateAgainstRules(bindings, { ...def, fields: def.fields!.filter((f) => f.fieldId !== 'amount') })).code).toBe('CONFLICT');
    expect(codeOf(() => checkSchemaUpdateAgainstRules(bindings, { ...def, capabilities: { triggersEnabled: false } }))).toMatchObject({ code: 'CONFLICT', details: { ruleIds: ['r1', 'r2'] } });
    expect(codeOf(() => checkSchemaUpdateAgainstRules(bindings, { ...def, description: 'x' })).code).toBe('OK');
  });

  it('409 on delete while rules fire; fine once they are unbound', () => {
    expect(codeOf(() => checkSchemaDeleteAgainstRules(bindings)).code).toBe('CONFLICT');
    const gone = ['r1', 'r2'].reduce((s, ruleId) => triggerBindingsAggregate.evolve(s, { type: 'TriggerRuleUnbound', data: { ruleId, schemaId: 's1' } }), bindings);
    expect(codeOf(() => checkSchemaDeleteAgainstRules(gone)).code).toBe('OK');
    expect(codeOf(() => checkSchemaUpdateAgainstRules(gone, { ...def, capabilities: {} })).code).toBe('OK');
  });
});
