/**
 * What-if patches for `BENCH_WHATIF=<name> npm run bench`: candidate fixes
 * applied at run time to this process and (through NODE_OPTIONS) to the
 * service's child process, so a suggestion can be measured before the product
 * code changes. Nothing here is product behaviour.
 *
 *   defer-flush  PostgresEventStore starts a group commit on setImmediate, so
 *                appends arriving in the same event-loop turn share it.
 *   yield-sql    PGlite query/exec/transaction first yield one macrotask, so a
 *                chain of PGlite calls (which resolve without I/O) cannot
 *                starve the event loop (socket reads, timers).
 *   both         the two together.
 */
import { PGlite } from '@electric-sql/pglite';
import { PostgresEventStore } from '@svc/deploy';

export const WHATIFS = ['defer-flush', 'yield-sql', 'both'] as const;

export function applyWhatIf(name: string | undefined): void {
  if (!name) return;
  if (!(WHATIFS as readonly string[]).includes(name))
    throw new Error(`BENCH_WHATIF must be one of ${WHATIFS.join(', ')}`);
  const g = globalThis as { __benchWhatIf?: string };
  if (g.__benchWhatIf) return;
  g.__benchWhatIf = name;
  if (name === 'defer-flush' || name === 'both') {
    const proto = PostgresEventStore.prototype as unknown as { flush: () => Promise<void> };
    const flush = proto.flush;
    proto.flush = function (this: { flushing: boolean }) {
      this.flushing = true;
      setImmediate(() => void flush.call(this));
      return Promise.resolve();
    };
  }
  if (name === 'yield-sql' || name === 'both') {
    const tick = () => new Promise<void>((r) => setImmediate(r));
    const proto = PGlite.prototype as unknown as Record<
      'query' | 'exec' | 'transaction',
      (...a: unknown[]) => Promise<unknown>
    >;
    for (const m of ['query', 'exec', 'transaction'] as const) {
      const orig = proto[m];
      proto[m] = async function (this: unknown, ...a: unknown[]) {
        await tick();
        return orig.apply(this, a);
      };
    }
  }
}

// As a preload (`--import tests/bench/whatif.ts`), patch from the environment.
applyWhatIf(process.env.BENCH_WHATIF || undefined);
