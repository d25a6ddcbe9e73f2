import { describe, expect, it } from 'vitest';
import { RedisWindowCounter } from '@svc/command-api';
import { serverUrl } from '../support/engines';
import { windowCounterContract } from './window-counter.contract';

const url = serverUrl('redis');
if (!url) describe.skip('window counter contract: Redis (REDIS_URL not set)', () => {});
else
  windowCounterContract('Redis', async () => {
    const c = new RedisWindowCounter(url);
    if (!(await c.ready())) throw new Error(`Redis at ${url} did not answer`);
    return c;
  });

// Fail-open needs no server: a port nothing listens on stands for Redis being down.
describe('Redis window counter when Redis is unreachable', () => {
  it('fails open: counts read as 0 so requests are allowed, and the outage is logged once', async () => {
    const logged: string[] = [];
    const c = new RedisWindowCounter('redis://127.0.0.1:1', (m) => logged.push(m));
    const now = new Date();
    expect(await c.add('k', 5, now)).toBe(0);
    expect(await c.get('k', now)).toBe(0);
    expect(logged).toHaveLength(1);
    await c.close();
  });
});
