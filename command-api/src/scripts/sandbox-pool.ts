import { Worker } from 'node:worker_threads';
import { InternalError, ServiceError } from '@svc/contracts';

/**
 * The sandbox threads (docs/scripts.md "Sandbox"): a small pool of worker
 * threads, each running one execution at a time in a fresh QuickJS runtime
 * (sandbox-worker.mjs). A script's synchronous loop can only hold its own
 * thread, never the service's event loop; host calls come back here as
 * messages. A thread that misses its deadline by more than a second is
 * terminated and replaced (the interrupt handler should have ended it).
 */
export interface SandboxLimits {
  timeoutMs: number;
  memoryBytes: number;
  stackBytes: number;
  maxHostCalls: number;
}

export type HostCall = (obj: string, method: string, argsJson: string) => Promise<string | undefined>;

export type SandboxAnswer =
  | { ok: true; json: string | undefined; hostCalls: number; durationMs: number }
  | {
      ok: false;
      errorCode: string;
      message: string;
      details?: Record<string, unknown>;
      hostCalls: number;
      durationMs: number;
    };

type Message =
  | { kind: 'call'; runId: number; callId: number; obj: string; method: string; args: string }
  | ({ kind: 'done'; runId: number; recycle?: boolean } & SandboxAnswer)
  | { kind: 'checked'; runId: number; ok: boolean; message?: string }
  | { kind: 'ready'; runId: 0 };

interface Job {
  runId: number;
  post: Record<string, unknown>;
  onCall?: HostCall;
  hardMs: number;
  settle: (m: Message) => void;
}

class SandboxThread {
  readonly worker: Worker;
  job: Job | undefined;
  private timer: NodeJS.Timeout | undefined;
  /** Set once the thread has loaded the engine and grown its heap: a job's clock starts then. */
  private ready = false;

  constructor(private readonly onFree: (t: SandboxThread, dead: boolean) => void) {
    this.worker = new Worker(new URL('./sandbox-worker.mjs', import.meta.url), { execArgv: [] });
    this.worker.unref();
    this.worker.on('message', (m: Message) => this.onMessage(m));
    this.worker.on('error', () =>
      this.end(
        {
          kind: 'done',
          runId: this.job?.runId ?? 0,
          ok: false,
          errorCode: 'INTERNAL',
          message: 'the sandbox thread failed',
          hostCalls: 0,
          durationMs: 0,
        },
        true,
      ),
    );
    this.worker.on('exit', () =>
      this.end(
        {
          kind: 'done',
          runId: this.job?.runId ?? 0,
          ok: false,
          errorCode: 'INTERNAL',
          message: 'the sandbox thread stopped',
          hostCalls: 0,
          durationMs: 0,
        },
        true,
      ),
    );
  }

  start(job: Job) {
    this.job = job;
    if (this.ready) this.begin(job);
  }

  private begin(job: Job) {
    this.timer = setTimeout(() => {
      // The interrupt handler did not end it: the thread is replaced, the execution ends as a timeout.
      this.end(
        {
          kind: 'done',
          runId: job.runId,
          ok: false,
          errorCode: 'TIMEOUT',
          message: 'The script ran past its time limit',
          hostCalls: 0,
          durationMs: job.hardMs,
        },
        true,
      );
    }, job.hardMs);
    this.worker.postMessage(job.post);
  }

  private onMessage(m: Message) {
    if (m.kind === 'ready') {
      this.ready = true;
      if (this.job) this.begin(this.job);
      return;
    }
    const job = this.job;
    if (!job || m.runId !== job.runId) return;
    if (m.kind === 'call') {
      const reply = (answer: Record<string, unknown>) => {
        if (this.job === job)
          this.worker.postMessage({ kind: 'answer', runId: job.runId, callId: m.callId, ...answer });
      };
      const run = job.onCall ? job.onCall(m.obj, m.method, m.args) : Promise.reject(new InternalError('no host'));
      run.then(
        (json) => reply({ ok: true, json }),
        (e: unknown) => {
          const se = e instanceof ServiceError ? e : undefined;
          const terminal = se && (se.code === 'WRITE_BUFFER_CAP_EXCEEDED' || se.code === 'RESOURCE_LIMIT_EXCEEDED');
          reply({
            ok: false,
            errorCode: se ? se.code : 'INTERNAL',
            message: se ? se.message : 'Internal error.',
            terminal: terminal || !se,
            details: se?.details,
          });
        },
      );
      return;
    }
    this.end(m, m.kind === 'done' && m.recycle === true);
  }

  private end(m: Message, dead: boolean) {
    const job = this.job;
    if (!job) return;
    this.job = undefined;
    clearTimeout(this.timer);
    job.settle(m);
    if (dead) void this.worker.terminate().catch(() => {});
    this.onFree(this, dead);
  }
}

export class SandboxPool {
  private readonly idle: SandboxThread[] = [];
  private readonly all = new Set<SandboxThread>();
  private readonly queue: Job[] = [];
  private nextRun = 0;
  private closed = false;

  constructor(private readonly o: { threads: number; maxQueue?: number }) {}

  /** Runs `source` with `input` (JSON) in a fresh runtime; host calls go to `onCall`. */
  run(
    source: string,
    inputJson: string,
    limits: SandboxLimits,
    host: { methods: Record<string, string[]>; call: HostCall },
  ): Promise<SandboxAnswer> {
    return this.submit(
      { kind: 'run', source, inputJson, limits, methods: host.methods },
      limits.timeoutMs + 1000,
      host.call,
    ).then((m) => {
      if (m.kind !== 'done') throw new InternalError('unexpected sandbox answer');
      const { kind: _k, runId: _r, recycle: _c, ...answer } = m;
      return answer as SandboxAnswer;
    });
  }

  /** Compiles `source` as a module without running it. */
  async check(source: string): Promise<{ ok: boolean; message?: string }> {
    const m = await this.submit({ kind: 'check', source }, 5000);
    if (m.kind === 'checked') return { ok: m.ok, message: m.message };
    throw new InternalError(m.kind === 'done' && !m.ok ? m.message : 'unexpected sandbox answer');
  }

  private submit(post: Record<string, unknown>, hardMs: number, onCall?: HostCall): Promise<Message> {
    if (this.closed)
      return Promise.reject(
        new ServiceError('EXECUTION_NOT_STARTED', 'The service is stopping', { headers: { 'retry-after': '2' } }),
      );
    if (this.queue.length >= (this.o.maxQueue ?? 64))
      return Promise.reject(
        new ServiceError('EXECUTION_CONTAINER_BUSY', 'Every sandbox is busy; retry', {
          headers: { 'retry-after': '2' },
        }),
      );
    return new Promise<Message>((settle) => {
      const runId = ++this.nextRun;
      this.queue.push({ runId, post: { ...post, runId }, onCall, hardMs, settle });
      this.pump();
    });
  }

  private pump() {
    while (this.queue.length) {
      let thread = this.idle.pop();
      if (!thread && this.all.size < this.o.threads) {
        thread = new SandboxThread((t, dead) => this.free(t, dead));
        this.all.add(thread);
      }
      if (!thread) return;
      thread.start(this.queue.shift()!);
    }
  }

  private free(t: SandboxThread, dead: boolean) {
    if (dead) this.all.delete(t);
    else if (!this.closed) this.idle.push(t);
    this.pump();
  }

  async close(): Promise<void> {
    this.closed = true;
    // Waiting executions never start: they answer 503 EXECUTION_NOT_STARTED (running ones end with their thread).
    for (const job of this.queue.splice(0))
      job.settle({
        kind: 'done',
        runId: job.runId,
        ok: false,
        errorCode: 'EXECUTION_NOT_STARTED',
        message: 'The service is stopping',
        hostCalls: 0,
        durationMs: 0,
      });
    const threads = [...this.all];
    this.all.clear();
    this.idle.length = 0;
    await Promise.all(threads.map((t) => t.worker.terminate().catch(() => 0)));
  }
}
