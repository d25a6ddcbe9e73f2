import { describe, expect, it } from 'vitest';
import { given, TEST_METADATA } from '../shared/given-when-then.test-support';
import {
  resolveScriptVersion,
  type ScriptEvent,
  scriptDecider,
  scriptNamesDecider,
  scriptNamesOf,
  scriptView,
} from './script';

const SOURCE = 'export default () => 1';
const pushed = (scriptId: string, version: number, source = SOURCE): ScriptEvent => ({
  type: 'ScriptVersionPushed',
  data: {
    scriptId,
    name: 'n',
    version,
    source,
    sourceBytes: Buffer.byteLength(source),
    declaredInputContract: null,
    description: null,
  },
});
const deleted = (scriptId: string, version: number): ScriptEvent => ({
  type: 'ScriptVersionDeleted',
  data: { scriptId, name: 'n', version },
});
const push = (scriptId: string, source = SOURCE) =>
  ({ type: 'PushScriptVersion', scriptId, name: 'n', source }) as const;

describe('PushScriptVersion', () => {
  it('numbers versions per name from 1 and records the source size in UTF-8 bytes', () => {
    given(scriptDecider)
      .when(push('a', 'export default () => "é"'))
      .then([pushed('a', 1, 'export default () => "é"')]);
    expect(pushed('a', 1, 'export default () => "é"').data).toMatchObject({ sourceBytes: 25 });
    given(scriptDecider, [pushed('a', 1)])
      .when(push('b'))
      .then([pushed('b', 2)]);
  });

  it('keeps the declared input contract and description', () => {
    const cmd = { ...push('a'), declaredInputContract: { type: 'object' }, description: 'd' };
    given(scriptDecider)
      .when(cmd)
      .then([
        {
          type: 'ScriptVersionPushed',
          data: { ...pushed('a', 1).data, declaredInputContract: { type: 'object' }, description: 'd' },
        } as ScriptEvent,
      ]);
  });

  it('never reuses a deleted version number', () => {
    given(scriptDecider, [pushed('a', 1), pushed('b', 2), deleted('b', 2)])
      .when(push('c'))
      .then([pushed('c', 3)]);
  });
});

describe('DeleteScriptVersion', () => {
  it('deletes a live version', () => {
    given(scriptDecider, [pushed('a', 1), pushed('b', 2)])
      .when({ type: 'DeleteScriptVersion', scriptId: 'b' })
      .then([deleted('b', 2)]);
  });

  it('refuses a version that is not live (404)', () => {
    given(scriptDecider).when({ type: 'DeleteScriptVersion', scriptId: 'x' }).thenThrows('NOT_FOUND');
    given(scriptDecider, [pushed('a', 1), deleted('a', 1)])
      .when({ type: 'DeleteScriptVersion', scriptId: 'a' })
      .thenThrows('NOT_FOUND');
  });
});

describe('versions', () => {
  it('latest is the newest live version; a deleted number resolves to nothing', () => {
    const state = given(scriptDecider, [pushed('a', 1), pushed('b', 2), deleted('b', 2)]).state();
    expect(resolveScriptVersion(state, 'latest')?.id).toBe('a');
    expect(resolveScriptVersion(state, 1)?.id).toBe('a');
    expect(resolveScriptVersion(state, 2)).toBeNull();
    expect(resolveScriptVersion(given(scriptDecider).state(), 'latest')).toBeNull();
  });

  it('a version carries its tenant, context and creation time; source only when asked', () => {
    const [v] = given(scriptDecider, [pushed('a', 1)]).state().versions;
    expect(v).toMatchObject({
      tenantId: TEST_METADATA.tenantId,
      contextId: TEST_METADATA.contextId,
      createdAt: TEST_METADATA.occurredAt,
    });
    expect(scriptView(v, false)).not.toHaveProperty('source');
    expect(scriptView(v, true)).toMatchObject({ source: SOURCE });
  });
});

describe('script names (scriptNamesDecider)', () => {
  const added = (name: string) => ({ type: 'ScriptNameAdded', data: { name } }) as const;
  it('the first push under a name lists it; later pushes under it add nothing', () => {
    given(scriptNamesDecider)
      .when({ type: 'AddScriptName', name: 'etl' })
      .then([added('etl')]);
    given(scriptNamesDecider, [added('etl')])
      .when({ type: 'AddScriptName', name: 'etl' })
      .then([]);
    given(scriptNamesDecider, [added('etl')])
      .when({ type: 'AddScriptName', name: 'report' })
      .then([added('report')]);
  });

  it('lists each name once, in name order, whatever the stream holds', () => {
    expect(scriptNamesOf([added('b'), added('a'), added('b')])).toEqual(['a', 'b']);
  });
});
