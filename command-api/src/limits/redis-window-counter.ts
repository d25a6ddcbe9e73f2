import { Redis } from 'ioredis';
import { windowOf, type WindowCounter } from './window-counter';

/**
 * Per-minute counters in Redis, shared by every process of a deployment: one
 * key per (name, window), INCRBY then EXPIRE in one round trip. When Redis is
 * unreachable the counter fails open (the spec: requests are allowed) and
 * reports 0, logging the first failure of each outage.
 */
export class RedisWindowCounter implements WindowCounter {
  private readonly redis: Redis;
  private failing = false;

  constructor(
    url: string,
    private readonly log: (message: string) => void = () => {},
    private readonly prefix = 'svc:window:',
  ) {
    // Fail fast instead of queueing commands while disconnected: a counter that waits would stall requests.
    this.redis = new Redis(url, {
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      connectTimeout: 1000,
      lazyConnect: false,
    });
    this.redis.on('error', () => {}); // surfaced through failOpen below
  }

  /** Waits (bounded) for the first connection; afterwards a down Redis only means failing open. */
  async ready(timeoutMs = 2000): Promise<boolean> {
    if (this.redis.status === 'ready') return true;
    return new Promise((resolve) => {
      const done = (ok: boolean) => {
        clearTimeout(t);
        this.redis.off('ready', onReady);
        resolve(ok);
      };
      const onReady = () => done(true);
      const t = setTimeout(() => done(false), timeoutMs);
      this.redis.once('ready', onReady);
    });
  }

  private key(name: string, now: Date) {
    return `${this.prefix}${name}:${windowOf(now)}`;
  }

  private failOpen(e: unknown): number {
    if (!this.failing) this.log(`rate-limit counters unavailable, allowing requests: ${(e as Error).message}`);
    this.failing = true;
    return 0;
  }

  async add(name: string, by: number, now: Date): Promise<number> {
    try {
      const res = await this.redis.multi().incrby(this.key(name, now), by).expire(this.key(name, now), 120).exec();
      this.failing = false;
      return Number(res?.[0]?.[1] ?? 0);
    } catch (e) {
      return this.failOpen(e);
    }
  }

  async get(name: string, now: Date): Promise<number> {
    try {
      const v = await this.redis.get(this.key(name, now));
      this.failing = false;
      return Number(v ?? 0);
    } catch (e) {
      return this.failOpen(e);
    }
  }

  async close(): Promise<void> {
    this.redis.disconnect();
  }
}
