import { describe, expect, it } from 'vitest';
import { PERMISSION_RE, grants, isSubset } from './permissions';

describe('grants', () => {
  it('the root wildcard covers everything', () => {
    for (const p of ['records:r', 'records:c', 'scripts:x:foo', 'billing:r', 'logs:r'])
      expect(grants(['*'], p)).toBe(true);
  });

  it('an exact permission covers itself only', () => {
    expect(grants(['records:r'], 'records:r')).toBe(true);
    expect(grants(['records:r'], 'records:c')).toBe(false);
    expect(grants(['records:r'], 'documents:r')).toBe(false);
  });

  it('<resource>:* covers every action of that resource and nothing else', () => {
    expect(grants(['records:*'], 'records:r')).toBe(true);
    expect(grants(['records:*'], 'records:c')).toBe(true);
    expect(grants(['records:*'], 'records:d')).toBe(true);
    expect(grants(['records:*'], 'documents:r')).toBe(false);
  });

  it('scripts:x covers scripts:x:<name>', () => {
    expect(grants(['scripts:x'], 'scripts:x:foo')).toBe(true);
    expect(grants(['scripts:x'], 'scripts:x')).toBe(true);
  });

  it('scripts:x:<name> covers only that name, not scripts:x nor another name', () => {
    expect(grants(['scripts:x:foo'], 'scripts:x:foo')).toBe(true);
    expect(grants(['scripts:x:foo'], 'scripts:x')).toBe(false);
    expect(grants(['scripts:x:foo'], 'scripts:x:bar')).toBe(false);
  });

  it(
    'scripts:x:* (the action for some name) is covered by scripts:x, by scripts:x:<any name> and by the ' + 'wildcards',
    () => {
      for (const held of [['scripts:x'], ['scripts:x:foo'], ['scripts:*'], ['*'], ['records:r', 'scripts:x:bar']])
        expect(grants(held, 'scripts:x:*'), held.join()).toBe(true);
      for (const held of [['scripts:r'], ['scripts:c', 'scripts:r:foo'], ['records:x'], ['records:*'], []])
        expect(grants(held, 'scripts:x:*'), held.join()).toBe(false);
    },
  );

  it('scripts:r does not cover scripts:x:<name>', () => {
    expect(grants(['scripts:r'], 'scripts:x:foo')).toBe(false);
  });

  it('an empty list grants nothing', () => {
    expect(grants([], 'records:r')).toBe(false);
  });

  it('any matching entry of several suffices', () => {
    expect(grants(['logs:r', 'records:c'], 'records:c')).toBe(true);
  });
});

describe('isSubset', () => {
  it('accepts a child fully covered by the parent', () => {
    expect(isSubset(['records:r'], ['*'])).toBe(true);
    expect(isSubset(['records:r', 'records:c'], ['records:*'])).toBe(true);
    expect(isSubset(['scripts:x:foo'], ['scripts:x'])).toBe(true);
    expect(isSubset([], ['records:r'])).toBe(true);
  });

  it('rejects a child with any uncovered entry', () => {
    expect(isSubset(['records:c'], ['records:r'])).toBe(false);
    expect(isSubset(['records:r', 'logs:r'], ['records:r'])).toBe(false);
    expect(isSubset(['scripts:x'], ['scripts:x:foo'])).toBe(false);
    expect(isSubset(['*'], ['records:*'])).toBe(false);
    expect(isSubset(['records:*'], ['records:r', 'records:c'])).toBe(false);
  });
});

describe('PERMISSION_RE', () => {
  it('matches the permission grammar', () => {
    for (const p of ['*', 'records:r', 'records:*', 'scripts:x:my_script-1']) expect(PERMISSION_RE.test(p)).toBe(true);
    for (const p of ['records', 'records:', ':r', 'Records:r', 'records:rr', 'scripts:x:', 'scripts:x:a b'])
      expect(PERMISSION_RE.test(p)).toBe(false);
  });
});
