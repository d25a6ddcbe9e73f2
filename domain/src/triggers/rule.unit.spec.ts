import { describe, expect, it } from 'vitest';
import { type CreateTrigger, InternalError, type Principal, type SchemaDefinition, ServiceError } from '@svc/contracts';
import { given, TEST_METADATA } from '../shared/given-when-then.test-support';
import {
  bindingOf,
  checkSchemaDeleteAgainstRules,
  checkSchemaUpdateAgainstRules,
  triggerBindingsAggregate,
} from './bindings';
import {
  projectableFields,
  type RuleDeclarationContext,
  type TriggerRuleCommand,
  triggerRuleDecider,
  type TriggerRuleEvent,
} from './rule';

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
  credentialId: 'k',
  kind: 'root',
  accountId: 'a',
  tenantId: 't',
  environment: 'live',
  contextId: 'c',
  crossContext: true,
  allowedActions: ['*'],
  dataScope: null,
  userId: null,
  wireVersionPin: null,
};
const body = (over: Partial<CreateTrigger> = {}): CreateTrigger => ({
  name: 'audit',
  schemaId: 's1',
  events: ['CREATE', 'UPDATE'],
  scriptRef: { name: 'audit', version: 1 },
  fields: ['amount', 'status'],
  grant: { allowedActions: ['records:r', 'records:c'] },
  ...over,
});
const ctx = (over: Partial<RuleDeclarationContext> = {}): RuleDeclarationContext => ({
  principal: root,
  schema: { id: 's1', definition: def },
  scriptExists: true,
  ...over,
});
const codeOf = (fn: () => unknown) => {
  try {
    fn();
  } catch (e) {
    return e instanceof ServiceError
      ? { code: e.code, details: e.details, message: e.message }
      : { code: 'THROWN', details: undefined, message: String(e) };
  }
  return { code: 'OK', details: undefined, message: '' };
};

const rules = triggerRuleDecider;
const create = (b: CreateTrigger = body(), over: Partial<RuleDeclarationContext> = {}): TriggerRuleCommand => ({
  type: 'CreateTriggerRule',
  ruleId: 'r1',
  body: b,
  ...ctx(over),
});
const created: TriggerRuleEvent = {
  type: 'TriggerRuleCreated',
  data: {
    ruleId: 'r1',
    name: 'audit',
    schemaId: 's1',
    typeName: 'invoice',
    events: ['CREATE', 'UPDATE'],
    scriptRef: { name: 'audit', version: 1 },
    fields: ['amount', 'status'],
    grant: { allowedActions: ['records:r', 'records:c'], dataScope: null },
    enabled: true,
  },
};
const deleted: TriggerRuleEvent = { type: 'TriggerRuleDeleted', data: { ruleId: 'r1', schemaId: 's1' } };
const actor = (over: Partial<Principal> = {}): Principal => ({
  ...root,
  tenantId: TEST_METADATA.tenantId,
  contextId: TEST_METADATA.contextId,
  ...over,
});

describe('CreateTriggerRule', () => {
  it('projects inline, filterable and lookup fields, never sensitive ones', () => {
    expect(projectableFields(def)).toEqual(['amount', 'status', 'ref']);
  });

  it('records scriptRef.version as a number (also when sent as its decimal string) or as latest', () => {
    given(rules)
      .when(create(body({ scriptRef: { name: 'audit', version: '1' } })))
      .then([created]);
    given(rules)
      .when(create(body({ scriptRef: { name: 'audit', version: 'latest' } })))
      .then([
        {
          type: 'TriggerRuleCreated',
          data: { ...created.data, scriptRef: { name: 'audit', version: 'latest' } },
        } as TriggerRuleEvent,
      ]);
    expect(
      codeOf(() =>
        rules.decide(create(body({ scriptRef: { name: 'audit', version: 'latest' } }), { scriptExists: false }), {
          exists: false,
        }),
      ),
    ).toMatchObject({ code: 'NOT_FOUND', message: 'Script audit has no version' });
  });

  it('declares a rule within the rules (enabled unless said otherwise)', () => {
    given(rules).when(create()).then([created]);
    const placeholders = {
      allowedActions: ['records:r:invoice'],
      dataScope: { userId: '${{ input.userId }}', scopes: ['${{ input.scope.team }}'] },
    };
    given(rules)
      .when(create(body({ fields: ['ref'], grant: placeholders, enabled: false })))
      .then([
        {
          type: 'TriggerRuleCreated',
          data: { ...created.data, fields: ['ref'], grant: placeholders, enabled: false },
        } as TriggerRuleEvent,
      ]);
  });

  it('the state keeps the rule with its tenant, context and creation time', () => {
    expect(given(rules, [created]).state()).toMatchObject({
      exists: true,
      id: 'r1',
      enabled: true,
      typeName: 'invoice',
      grant: { dataScope: null },
      tenantId: 't1',
      contextId: 'c1',
      createdAt: TEST_METADATA.occurredAt,
    });
  });

  it('refuses unprojectable fields with 400 listing the projectable ones', () => {
    for (const f of ['notes', 'ssn', 'nope']) {
      given(rules)
        .when(create(body({ fields: [f] })))
        .thenThrows('VALIDATION_ERROR');
      expect(codeOf(() => rules.decide(create(body({ fields: [f] })), rules.initialState())).details).toEqual({
        projectableFields: ['amount', 'status', 'ref'],
      });
    }
    given(rules)
      .when(create(body({ fields: ['amount', 'amount'] })))
      .thenThrows('VALIDATION_ERROR');
  });

  it('refuses a schema without triggersEnabled (400), a missing schema or script (404)', () => {
    given(rules)
      .when(create(body(), { schema: { id: 's1', definition: { ...def, capabilities: {} } } }))
      .thenThrows('VALIDATION_ERROR');
    given(rules)
      .when(create(body(), { schema: null }))
      .thenThrows('NOT_FOUND');
    given(rules)
      .when(create(body(), { scriptExists: false }))
      .thenThrows('NOT_FOUND');
  });

  it('needs records:r on the type when fields are declared, and no literal data scope', () => {
    given(rules)
      .when(create(body({ grant: { allowedActions: ['records:c'] } })))
      .thenThrows('VALIDATION_ERROR');
    given(rules)
      .when(create(body({ grant: { allowedActions: ['records:r:other'] } })))
      .thenThrows('VALIDATION_ERROR');
    given(rules)
      .when(create(body({ grant: { allowedActions: ['records:r'], dataScope: { userId: 'u-1' } } })))
      .thenThrows('VALIDATION_ERROR');
    given(rules)
      .when(create(body({ grant: { allowedActions: ['records:r'], dataScope: { scopes: ['team:a'] } } })))
      .thenThrows('VALIDATION_ERROR');
    // fields: [] projects nothing: no read clause needed, a literal scope allowed
    expect(
      given(rules)
        .when(create(body({ fields: [], grant: { allowedActions: ['records:c'], dataScope: { userId: 'u-1' } } })))
        .events(),
    ).toHaveLength(1);
  });

  it('refuses malformed permissions and placeholders, duplicate events, and a grant wider than the caller', () => {
    given(rules)
      .when(create(body({ grant: { allowedActions: ['records:r', 'bad perm'] } })))
      .thenThrows('VALIDATION_ERROR');
    given(rules)
      .when(create(body({ grant: { allowedActions: ['records:r'], dataScope: { userId: '${{ input.secret }}' } } })))
      .thenThrows('VALIDATION_ERROR');
    given(rules)
      .when(create(body({ events: ['CREATE', 'CREATE'] })))
      .thenThrows('VALIDATION_ERROR');
    const scoped = { ...root, kind: 'scoped' as const, allowedActions: ['triggers:c', 'records:r'] };
    given(rules)
      .when(create(body(), { principal: scoped }))
      .thenThrows('FORBIDDEN');
  });

  it('never reuses an id', () => {
    expect(() => given(rules, [created, deleted]).when(create()).events()).toThrow(InternalError);
  });
});

describe('DeleteTriggerRule', () => {
  it('deletes a rule of the caller context', () => {
    given(rules, [created]).when({ type: 'DeleteTriggerRule', actor: actor() }).then([deleted]);
    expect(given(rules, [created, deleted]).state()).toEqual({ exists: false, deleted: true });
  });

  it('a missing, deleted or foreign rule is not found', () => {
    given(rules).when({ type: 'DeleteTriggerRule', actor: actor() }).thenThrows('NOT_FOUND');
    given(rules, [created, deleted]).when({ type: 'DeleteTriggerRule', actor: actor() }).thenThrows('NOT_FOUND');
    given(rules, [created])
      .when({ type: 'DeleteTriggerRule', actor: actor({ contextId: 'c2' }) })
      .thenThrows('NOT_FOUND');
    given(rules, [created])
      .when({ type: 'DeleteTriggerRule', actor: actor({ tenantId: 't2' }) })
      .thenThrows('NOT_FOUND');
  });
});

describe('bindings', () => {
  it('a rule is bound on creation and unbound on deletion', () => {
    expect(bindingOf(created)).toEqual({
      type: 'TriggerRuleBound',
      data: { ruleId: 'r1', schemaId: 's1', fields: ['amount', 'status'], enabled: true },
    });
    expect(bindingOf(deleted)).toEqual({ type: 'TriggerRuleUnbound', data: { ruleId: 'r1', schemaId: 's1' } });
  });
});

describe('schema changes while rules fire', () => {
  const bindings = [
    { type: 'TriggerRuleBound' as const, data: { ruleId: 'r1', schemaId: 's1', fields: ['amount'], enabled: true } },
    { type: 'TriggerRuleBound' as const, data: { ruleId: 'r2', schemaId: 's1', fields: [], enabled: true } },
  ].reduce((s, e) => triggerBindingsAggregate.evolve(s, e), triggerBindingsAggregate.initialState());

  it('409 when a projected field stops being inline (or goes), or triggersEnabled goes off', () => {
    const notInline = {
      ...def,
      fields: def.fields!.map((f) => (f.fieldId === 'amount' ? { ...f, inline: false } : f)),
    };
    expect(codeOf(() => checkSchemaUpdateAgainstRules(bindings, notInline))).toMatchObject({
      code: 'CONFLICT',
      details: { ruleIds: ['r1'] },
    });
    expect(
      codeOf(() =>
        checkSchemaUpdateAgainstRules(bindings, { ...def, fields: def.fields!.filter((f) => f.fieldId !== 'amount') }),
      ).code,
    ).toBe('CONFLICT');
    expect(
      codeOf(() => checkSchemaUpdateAgainstRules(bindings, { ...def, capabilities: { triggersEnabled: false } })),
    ).toMatchObject({ code: 'CONFLICT', details: { ruleIds: ['r1', 'r2'] } });
    expect(codeOf(() => checkSchemaUpdateAgainstRules(bindings, { ...def, description: 'x' })).code).toBe('OK');
  });

  it('409 on delete while rules fire; fine once they are unbound', () => {
    expect(codeOf(() => checkSchemaDeleteAgainstRules(bindings)).code).toBe('CONFLICT');
    const gone = ['r1', 'r2'].reduce(
      (s, ruleId) =>
        triggerBindingsAggregate.evolve(s, { type: 'TriggerRuleUnbound', data: { ruleId, schemaId: 's1' } }),
      bindings,
    );
    expect(codeOf(() => checkSchemaDeleteAgainstRules(gone)).code).toBe('OK');
    expect(codeOf(() => checkSchemaUpdateAgainstRules(gone, { ...def, capabilities: {} })).code).toBe('OK');
  });
});
