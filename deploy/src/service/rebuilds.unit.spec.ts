import { describe, expect, it } from 'vitest';
import { withSearchPath } from './rebuilds';

describe("withSearchPath (the online rebuild's shadow connection)", () => {
  it('replaces the search_path of the URL and keeps its other options and parameters', () => {
    const url = withSearchPath(
      'postgres://u@h:5432/db?sslmode=disable&options=-c%20statement_timeout%3D5000%20-c%20search_path%3Dt_abc',
      ['t_abc_rebuild', 't_abc'],
    );
    const u = new URL(url);
    expect(u.searchParams.get('sslmode')).toBe('disable');
    expect(u.searchParams.get('options')).toBe('-c statement_timeout=5000 -c search_path=t_abc_rebuild,t_abc');
  });

  it('adds one when the URL has none, and quotes names that need it', () => {
    expect(new URL(withSearchPath('postgres://u@h/db', ['s_rebuild', 'public'])).searchParams.get('options')).toBe(
      '-c search_path=s_rebuild,public',
    );
    expect(
      new URL(withSearchPath('postgres://u@h/db', ['My Schema_rebuild', 'My Schema'])).searchParams.get('options'),
    ).toBe('-c search_path="My\\ Schema_rebuild","My\\ Schema"');
  });
});
