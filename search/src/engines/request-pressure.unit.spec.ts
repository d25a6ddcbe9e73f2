import { describe, expect, it } from 'vitest';
import { busyGapMs, noteRequest, PassagePacing, RequestPressure } from './request-pressure';

/** A clock and an event loop whose busy share the test sets per window. */
function loop() {
  let now = 0;
  let idle = 0;
  let active = 0;
  return {
    now: () => now,
    sample: () => ({ idle, active }),
    /** `ms` pass with the loop busy for `share` of them. */
    pass(ms: number, share: number) {
      now += ms;
      active += ms * share;
      idle += ms * (1 - share);
    },
  };
}

describe('RequestPressure', () => {
  it(
    'is busy when the event loop ran callbacks more than half of the last window, and not before a window ' +
      'has passed',
    () => {
      const l = loop();
      const p = new RequestPressure({ sample: l.sample, now: l.now, windowMs: 100, requests: () => l.now() });
      l.pass(50, 1);
      expect(p.busy()).toBe(false); // half a window: the previous value (none yet)
      l.pass(50, 1);
      expect(p.busy()).toBe(true);
      l.pass(100, 0.2);
      expect(p.utilisation()).toBeCloseTo(0.2, 5);
      expect(p.busy()).toBe(false);
    },
  );

  it("is not busy while no requests come in, however busy the loop (the indexer's own work)", () => {
    const l = loop();
    let requests = 0;
    const p = new RequestPressure({ sample: l.sample, now: l.now, windowMs: 100, requests: () => requests });
    l.pass(100, 1);
    expect(p.busy()).toBe(false); // the loop ran all the window, no request began
    requests += 1; // a status poll a second
    l.pass(100, 1);
    expect(p.busy()).toBe(false);
    requests += 2; // 20 requests a second or more
    l.pass(100, 0.9);
    expect(p.busy()).toBe(true);
    requests += 40; // many requests, but the loop mostly idle
    l.pass(100, 0.3);
    expect(p.busy()).toBe(false);
  });

  it('counts what the HTTP edge notes (noteRequest) by default', () => {
    const l = loop();
    const p = new RequestPressure({ sample: l.sample, now: l.now, windowMs: 100 });
    l.pass(100, 1);
    expect(p.busy()).toBe(false);
    noteRequest();
    noteRequest();
    l.pass(100, 1);
    expect(p.busy()).toBe(true);
  });
});

describe('PassagePacing', () => {
  it('lets indexing calls start freely while the requests leave the loop idle', () => {
    const l = loop();
    const pacing = new PassagePacing({ busy: () => false }, 1000, l.now);
    pacing.started();
    expect(pacing.wait(3)).toBe(0);
  });

  it('under load: one indexing call at a time, at most one per gap, and the backlog still moves', () => {
    let t = 0;
    const pacing = new PassagePacing({ busy: () => true }, 1000, () => t);
    expect(pacing.wait(0)).toBe(0); // the first may start
    pacing.started();
    expect(pacing.wait(1)).toBe(1000); // not beside a running one
    t = 300;
    expect(pacing.wait(0)).toBe(700); // the rest of the gap
    t = 1000;
    expect(pacing.wait(0)).toBe(0);
  });

  it('EMBEDDING_BUSY_GAP_MS=0 turns pacing off; anything unreadable keeps the default', () => {
    expect(busyGapMs({ EMBEDDING_BUSY_GAP_MS: '0' })).toBe(0);
    expect(new PassagePacing({ busy: () => true }, 0).wait(4)).toBe(0);
    expect(busyGapMs({})).toBe(1000);
    expect(busyGapMs({ EMBEDDING_BUSY_GAP_MS: '-5' })).toBe(1000);
    expect(busyGapMs({ EMBEDDING_BUSY_GAP_MS: 'soon' })).toBe(1000);
  });
});
