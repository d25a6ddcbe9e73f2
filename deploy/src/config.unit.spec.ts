import { describe, expect, it } from 'vitest';
import { loadConfig } from './config';

/** The search database's start-up variables: a wrong SEARCH_DB stops the start naming it; a niceness out of range is the default. */
describe('SEARCH_DB and SEARCH_DB_NICE', () => {
  const base = { DATA_DIR: '/tmp/unused' } as NodeJS.ProcessEnv;

  it('default: the separate database at niceness 5; main and any 0-19 niceness are taken', () => {
    expect(loadConfig(base)).toMatchObject({ searchDb: 'separate', searchDbNice: 5 });
    expect(loadConfig({ ...base, SEARCH_DB: 'main', SEARCH_DB_NICE: '19' })).toMatchObject({ searchDb: 'main', searchDbNice: 19 });
    expect(loadConfig({ ...base, SEARCH_DB_NICE: '0' }).searchDbNice).toBe(0);
  });

  it('an unknown SEARCH_DB stops the start with the variable and the values it takes', () => {
    expect(() => loadConfig({ ...base, SEARCH_DB: 'elsewhere' })).toThrow('SEARCH_DB must be separate or main, not elsewhere');
  });

  it.each(['-1', '20', '2.5', 'high', '1e9'])('SEARCH_DB_NICE=%s is out of range: the default 5', (v) => {
    expect(loadConfig({ ...base, SEARCH_DB_NICE: v }).searchDbNice).toBe(5);
  });
});

/** The opening inference balance of the account created on first start (DEFAULT_INFERENCE_BALANCE_CENTS). */
describe('DEFAULT_INFERENCE_BALANCE_CENTS', () => {
  const base = { DATA_DIR: '/tmp/unused' } as NodeJS.ProcessEnv;

  it('default 1,000 cents; any whole number of cents (0 included) is taken', () => {
    expect(loadConfig(base).defaultInferenceBalanceCents).toBe(1000);
    expect(loadConfig({ ...base, DEFAULT_INFERENCE_BALANCE_CENTS: '250' }).defaultInferenceBalanceCents).toBe(250);
    expect(loadConfig({ ...base, DEFAULT_INFERENCE_BALANCE_CENTS: '0' }).defaultInferenceBalanceCents).toBe(0);
  });

  it.each(['-1', '2.5', 'lots'])('DEFAULT_INFERENCE_BALANCE_CENTS=%s stops the start naming the variable', (v) => {
    expect(() => loadConfig({ ...base, DEFAULT_INFERENCE_BALANCE_CENTS: v })).toThrow(/DEFAULT_INFERENCE_BALANCE_CENTS/);
  });
});

/** Reverse-proxy hops whose X-Forwarded-For entries are trusted for the client address (TRUST_PROXY_HOPS). */
describe('TRUST_PROXY_HOPS', () => {
  const base = { DATA_DIR: '/tmp/unused' } as NodeJS.ProcessEnv;

  it('default 0 (X-Forwarded-For ignored); any whole number of hops is taken', () => {
    expect(loadConfig(base).trustProxyHops).toBe(0);
    expect(loadConfig({ ...base, TRUST_PROXY_HOPS: '' }).trustProxyHops).toBe(0);
    expect(loadConfig({ ...base, TRUST_PROXY_HOPS: '0' }).trustProxyHops).toBe(0);
    expect(loadConfig({ ...base, TRUST_PROXY_HOPS: '1' }).trustProxyHops).toBe(1);
    expect(loadConfig({ ...base, TRUST_PROXY_HOPS: '2' }).trustProxyHops).toBe(2);
  });

  it.each(['abc', '-1', '1.5', 'true'])('TRUST_PROXY_HOPS=%s stops the start naming the variable', (v) => {
    expect(() => loadConfig({ ...base, TRUST_PROXY_HOPS: v })).toThrow(`TRUST_PROXY_HOPS must be a whole number of trusted reverse-proxy hops (0 or more; 0 ignores X-Forwarded-For), not ${v}`);
  });
});

/** The origins browsers may call the API from (CORS_ORIGINS). */
describe('CORS_ORIGINS', () => {
  const base = { DATA_DIR: '/tmp/unused' } as NodeJS.ProcessEnv;

  it('unset or empty: no CORS; `*`; or a comma-separated list of exact origins, spaces around commas ignored', () => {
    expect(loadConfig(base).corsOrigins).toBeUndefined();
    expect(loadConfig({ ...base, CORS_ORIGINS: '' }).corsOrigins).toBeUndefined();
    expect(loadConfig({ ...base, CORS_ORIGINS: ' * ' }).corsOrigins).toBe('*');
    expect(loadConfig({ ...base, CORS_ORIGINS: 'https://app.example.com, http://localhost:5173,http://[::1]:8000' }).corsOrigins).toEqual([
      'https://app.example.com',
      'http://localhost:5173',
      'http://[::1]:8000',
    ]);
  });

  it.each([
    ['https://app.example.com/', "write 'https://app.example.com'"],
    ['https://app.example.com/app', "write 'https://app.example.com'"],
    ['https://App.Example.com', "write 'https://app.example.com'"],
    ['https://app.example.com:443', "write 'https://app.example.com'"],
    ['app.example.com', 'is not an http(s) origin'],
    ['ftp://files.example.com', 'is not an http(s) origin'],
    ['*, https://app.example.com', "'*' is not an http(s) origin"],
    ['https://a.example.com,,https://b.example.com', "'' is not an http(s) origin"],
  ])('CORS_ORIGINS=%s stops the start: %s', (v, reason) => {
    expect(() => loadConfig({ ...base, CORS_ORIGINS: v })).toThrow(/^CORS_ORIGINS/);
    expect(() => loadConfig({ ...base, CORS_ORIGINS: v })).toThrow(reason);
  });
});
