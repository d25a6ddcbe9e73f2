import {
  type AppendRequest,
  type AppendResult,
  type EventStore,
  expectationHolds,
  type ExpectedRevision,
  type NewEvent,
  type ReadStreamOptions,
  type StoredEvent,
  WrongExpectedRevisionError,
} from '@svc/domain';

/**
 * The event store a script's host calls write to (docs/scripts.md "Atomicity"):
 * reads see the real stream as it was when the execution first read it plus the
 * events this execution staged; appends are checked against that view and kept
 * here. `commitRequests()` turns everything staged into one multi-stream append,
 * each written stream expected at the revision first seen, so a writer that got
 * in between makes the whole commit fail (CONCURRENT_MODIFICATION).
 */
interface StreamView {
  /** The real stream's last revision when first read (-1: no stream). */
  baseRevision: number;
  base: StoredEvent[];
  staged: StoredEvent[];
  /** Expectations of the staged appends that were not relative to a read ('any'). */
  anyOnly: boolean;
  /** Only appended to with 'any' so far: the real stream was never read (a tenant's usage stream is long). */
  unread?: boolean;
}

export class StagingEventStore implements EventStore {
  private readonly views = new Map<string, StreamView>();
  /** Streams in the order they were first written. */
  private readonly written: string[] = [];
  private readonly newEvents = new Map<string, NewEvent[]>();

  constructor(private readonly real: EventStore) {}

  private async view(streamId: string): Promise<StreamView> {
    let v = this.views.get(streamId);
    if (v?.unread) {
      const base = await this.real.readStream(streamId);
      v.unread = false;
      v.base = base;
      v.baseRevision = base.length ? base[base.length - 1].revision : -1;
      v.staged = v.staged.map((e, i) => ({ ...e, revision: v!.baseRevision + 1 + i }));
    }
    if (!v) {
      const base = await this.real.readStream(streamId);
      // A concurrent first read of the same stream: keep the first.
      v = this.views.get(streamId) ?? {
        baseRevision: base.length ? base[base.length - 1].revision : -1,
        base,
        staged: [],
        anyOnly: true,
      };
      this.views.set(streamId, v);
    }
    return v;
  }

  async readStream(streamId: string, options: ReadStreamOptions = {}): Promise<StoredEvent[]> {
    const v = await this.view(streamId);
    let all = [...v.base, ...v.staged];
    if (options.fromRevision !== undefined) {
      const from = options.fromRevision;
      all =
        options.direction === 'backwards'
          ? all.filter((e) => e.revision <= from)
          : all.filter((e) => e.revision >= from);
    }
    if (options.direction === 'backwards') all.reverse();
    return options.maxCount !== undefined ? all.slice(0, options.maxCount) : all;
  }

  async append(streamId: string, events: NewEvent[], expectedRevision: ExpectedRevision): Promise<AppendResult> {
    const [r] = await this.appendMulti([{ streamId, events, expectedRevision }]);
    return r;
  }

  async appendMulti(requests: AppendRequest[]): Promise<AppendResult[]> {
    // An 'any' append to a stream this execution never read needs no read of it (nothing to check).
    for (const r of requests)
      if (r.expectedRevision === 'any' && !this.views.has(r.streamId))
        this.views.set(r.streamId, { baseRevision: -1, base: [], staged: [], anyOnly: true, unread: true });
    const views = await Promise.all(
      requests.map((r) => (r.expectedRevision === 'any' ? this.views.get(r.streamId)! : this.view(r.streamId))),
    );
    requests.forEach((r, i) => {
      const v = views[i];
      const actual = v.baseRevision + v.staged.length;
      if (!expectationHolds(r.expectedRevision, actual))
        throw new WrongExpectedRevisionError(r.streamId, r.expectedRevision, actual < 0 ? 'no_stream' : actual);
    });
    return requests.map((r, i) => {
      const v = views[i];
      if (r.expectedRevision !== 'any') v.anyOnly = false;
      if (!this.newEvents.has(r.streamId)) {
        this.written.push(r.streamId);
        this.newEvents.set(r.streamId, []);
      }
      for (const e of r.events) {
        const revision = v.baseRevision + v.staged.length + 1;
        v.staged.push({ ...e, streamId: r.streamId, revision, position: 0 } as unknown as StoredEvent);
        this.newEvents.get(r.streamId)!.push(e);
      }
      // Position 0: nothing is durable yet, so the command handlers do not wait on the read models.
      return { nextExpectedRevision: v.baseRevision + v.staged.length, position: 0 };
    });
  }

  /** The staged events of each written stream, in order. */
  stagedStreams(): Array<{ streamId: string; events: NewEvent[] }> {
    return this.written
      .map((streamId) => ({ streamId, events: this.newEvents.get(streamId)! }))
      .filter((s) => s.events.length > 0);
  }

  /** The events staged for one stream (undefined: none). */
  staged(streamId: string): NewEvent[] | undefined {
    return this.newEvents.get(streamId);
  }

  /**
   * One atomic append of everything staged, each written stream expected where this execution first saw it,
   * plus (with `checkReads`) an empty append per stream only read, expected at the revision read: a write
   * to any of them in between fails the whole commit. Nothing staged: nothing to commit.
   */
  commitRequests(checkReads = true): AppendRequest[] {
    const writes = this.stagedStreams().map(({ streamId, events }) => {
      const v = this.views.get(streamId)!;
      const expectedRevision: ExpectedRevision = v.anyOnly ? 'any' : v.baseRevision < 0 ? 'no_stream' : v.baseRevision;
      return { streamId, events, expectedRevision };
    });
    if (!writes.length || !checkReads) return writes;
    const reads = [...this.views]
      .filter(([streamId, v]) => !this.newEvents.has(streamId) && !v.unread)
      .map(([streamId, v]) => ({
        streamId,
        events: [] as NewEvent[],
        expectedRevision: (v.baseRevision < 0 ? 'no_stream' : v.baseRevision) as ExpectedRevision,
      }));
    return [...writes, ...reads];
  }

  readAll(after: number, maxCount: number) {
    return this.real.readAll(after, maxCount);
  }
  headPosition() {
    return this.real.headPosition();
  }
  onAppended(listener: () => void) {
    return this.real.onAppended(listener);
  }
  async close() {}
}
