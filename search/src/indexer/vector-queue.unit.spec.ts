import { describe, expect, it } from 'vitest';
import { FairQueue, newJob, type Slice, type VectorJob } from './vector-queue';

const meta = {
  tenantId: null,
  contextId: null,
  accountId: null,
  actorKeyId: null,
  userId: null,
  requestId: 'r',
  occurredAt: '2026-01-01T00:00:00.000Z',
  schemaVersion: 1,
};
const job = (itemId: string, tenantId: string, n: number, position: number): VectorJob =>
  newJob({
    itemId,
    tenantId,
    contextId: 'c',
    position,
    kind: 'record',
    revision: 0,
    mode: 'HYBRID',
    n,
    textErr: null,
    meta: meta as never,
  });

/** Serves one round as the indexer does: every passage of the slices gets a vector; jobs that are complete leave. */
function serve(q: FairQueue, slices: Slice[]): string[] {
  const out: string[] = [];
  for (const s of slices) {
    for (let i = s.from; i < s.to; i++) s.job.vectors.push([i]);
    out.push(`${s.job.itemId}:${s.to - s.from}`);
    if (s.job.vectors.length === s.job.n) q.remove(s.job.itemId);
  }
  return out;
}

describe('FairQueue (the search projector’s per-tenant vector queue)', () => {
  it(
    'a big job is cut into rounds; a small job of another tenant is served in the next round, not after the ' +
      'big one',
    () => {
      const q = new FairQueue();
      q.put(job('A-big', 'A', 500, 10));
      expect(serve(q, q.round(8))).toEqual(['A-big:8']);
      q.put(job('B-small', 'B', 1, 11));
      expect(serve(q, q.round(8))).toEqual(['A-big:4', 'B-small:1']); // one call, shared
      expect(q.current('B-small')).toBeUndefined();
      expect(serve(q, q.round(8))).toEqual(['A-big:8']);
      expect(q.current('A-big')!.vectors).toHaveLength(20);
    },
  );

  it('tenants take turns; each tenant’s jobs stay in log order and one share may span several of them', () => {
    const q = new FairQueue();
    for (let i = 0; i < 5; i++) q.put(job(`A${i}`, 'A', 2, i));
    q.put(job('B0', 'B', 10, 5));
    q.put(job('C0', 'C', 1, 6));
    // 3 tenants, budget 9: 3 passages each
    expect(serve(q, q.round(9))).toEqual(['A0:2', 'A1:1', 'B0:3', 'C0:1']);
    expect(serve(q, q.round(9))).toEqual(['A1:1', 'A2:2', 'A3:1', 'B0:4']); // C is done: 2 tenants, 4 each
    // more tenants than passages: one each, the rest wait for the next round, where the turn resumes
    const r = new FairQueue();
    for (const t of ['P', 'Q', 'R', 'S']) r.put(job(`${t}0`, t, 3, 0));
    expect(serve(r, r.round(2))).toEqual(['P0:1', 'Q0:1']);
    expect(serve(r, r.round(2))).toEqual(['R0:1', 'S0:1']);
    expect(serve(r, r.round(2))).toEqual(['P0:1', 'Q0:1']);
  });

  it('a newer job of an item replaces the queued one; cancels, contexts, backoff, the oldest position', () => {
    const q = new FairQueue();
    q.put(job('x', 'A', 4, 3));
    q.put(job('y', 'A', 1, 4));
    q.put(job('z', 'B', 1, 5));
    expect(q.minPosition()).toBe(3);
    q.put(job('x', 'A', 2, 9));
    expect(q.size).toBe(3);
    expect(q.current('x')!.n).toBe(2);
    expect(q.minPosition()).toBe(4);
    expect(serve(q, q.round(64))).toEqual(['y:1', 'x:2', 'z:1']);
    expect(q.size).toBe(0);
    expect(q.minPosition()).toBe(Infinity);

    q.put(job('a', 'A', 1, 1));
    q.put(job('b', 'B', 1, 2));
    expect(q.removeContext('A', 'c')).toEqual(['a']);
    q.current('b')!.notBefore = 1_000;
    expect(q.round(8, 500)).toEqual([]);
    expect(q.nextRetryAt()).toBe(1_000);
    expect(serve(q, q.round(8, 1_000))).toEqual(['b:1']);
  });

  it('a complete job not yet committed comes back as an empty slice; a job being committed is skipped', () => {
    const q = new FairQueue();
    const j = job('w', 'A', 2, 1);
    q.put(j);
    j.vectors.push([0], [1]);
    expect(q.round(8).map((s) => [s.job.itemId, s.from, s.to])).toEqual([['w', 2, 2]]);
    j.committing = true;
    expect(q.round(8)).toEqual([]);
  });

  it(
    "a model-change rebuild waits in a lane of its own: the tenant's new work is served in turn beside it, " +
      'and a context delete cancels both',
    () => {
      const q = new FairQueue();
      for (let i = 0; i < 3; i++) {
        const j = job(`A-old-${i}`, 'A', 4, Number.MAX_SAFE_INTEGER);
        j.lane = 'rebuild:A';
        q.put(j);
      }
      expect(serve(q, q.round(8))).toEqual(['A-old-0:4', 'A-old-1:4']);
      q.put(job('A-new', 'A', 1, 20));
      // The tenant's new record shares the next round with its rebuild, instead of waiting behind it.
      expect(serve(q, q.round(8)).sort()).toEqual(['A-new:1', 'A-old-2:4']);
      expect(q.minPosition()).toBe(Infinity);
      const k = job('A-old-3', 'A', 2, Number.MAX_SAFE_INTEGER);
      k.lane = 'rebuild:A';
      q.put(k);
      q.put(job('A-new-2', 'A', 2, 21));
      expect(q.removeContext('A', 'c').sort()).toEqual(['A-new-2', 'A-old-3']);
      expect(q.size).toBe(0);
    },
  );
});
