import { describe, expect, it } from 'vitest';
import type { DomainEvent } from '@svc/contracts';
import { decideDeleteScriptVersion, decidePushScript, resolveScriptVersion, scriptAggregate, type ScriptState } from './script';

const md = { tenantId: 't', contextId: 'c', accountId: 'a', actorKeyId: null, userId: null, requestId: null, occurredAt: '2026-11-25T00:00:00.000Z', schemaVersion: 1 };
const given = (events: DomainEvent[]): ScriptState => events.reduce((s, e) => scriptAggregate.evolve(s, e, md), scriptAggregate.initialState());
const push = (state: ScriptState, id: string, source = 'export default () => 1') => decidePushScript({ scriptId: id, name: 'n', source }, state);

describe('script versions', () => {
  it('numbers versions per name from 1 and records the source size in UTF-8 bytes', () => {
    const first = push(given([]), 'a', 'export default () => "é"');
    expect(first).toEqual([{ type: 'ScriptVersionPushed', data: { scriptId: 'a', name: 'n', version: 1, source: 'export default () => "é"', sourceBytes: 25, declaredInputContract: null, description: null } }]);
    const second = push(given(first), 'b');
    expect(second[0].data).toMatchObject({ version: 2 });
  });

  it('never reuses a deleted version number; latest is the newest live version', () => {
    const e1 = push(given([]), 'a');
    const e2 = push(given(e1), 'b');
    const del = decideDeleteScriptVersion('b', given([...e1, ...e2]));
    expect(del).toEqual([{ type: 'ScriptVersionDeleted', data: { scriptId: 'b', name: 'n', version: 2 } }]);
    const state = given([...e1, ...e2, ...del]);
    expect(push(state, 'c')[0].data).toMatchObject({ version: 3 });
    expect(resolveScriptVersion(state, 'latest')?.id).toBe('a');
    expect(resolveScriptVersion(state, 2)).toBeNull();
    expect(resolveScriptVersion(given([]), 'latest')).toBeNull();
  });

  it('refuses to delete a version that is not live (404)', () => {
    expect(() => decideDeleteScriptVersion('x', given([]))).toThrow(expect.objectContaining({ code: 'NOT_FOUND' }));
  });
});
