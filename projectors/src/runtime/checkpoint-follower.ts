import { type ReadModelCheckpoint, readCheckpoint, type Sql } from '@svc/domain';
import { CHECKPOINT_CHANNEL, type ProjectionRunner } from './runner';

/**
 * The read models' checkpoint (port: domain/src/ports/read-model-checkpoint.ts) in the runner's own process: its
 * applied position.
 */
export function runnerCheckpoint(runner: ProjectionRunner): ReadModelCheckpoint {
  const listeners = new Set<() => void>();
  let closed = false;
  let watching = false;
  // One waiter on the runner at a time, for every listener: released by each batch it applies.
  const watch = async () => {
    if (watching) return;
    watching = true;
    while (!closed && listeners.size) {
      await runner.waitFor(runner.current + 1, 60_000);
      for (const l of listeners) l();
    }
    watching = false;
  };
  return {
    position: async () => runner.current,
    onAdvance(listener) {
      listeners.add(listener);
      void watch();
      return () => listeners.delete(listener);
    },
    async close() {
      closed = true;
      listeners.clear();
    },
  };
}

/**
 * The read models' checkpoint in a process without the runner (role query): the runner's row of the checkpoint
 * table, moved by its notifications (only this schema's: notifyCheckpoint names it) and read again every `pollMs`
 * while someone listens, should a notification be lost.
 */
export async function followCheckpoint(sql: Sql, runnerName: string, pollMs = 1000): Promise<ReadModelCheckpoint> {
  let known = await readCheckpoint(sql, runnerName);
  const listeners = new Set<() => void>();
  const tell = () => {
    for (const l of listeners) l();
  };
  const { rows } = await sql.query<{ schema: string }>('SELECT current_schema() AS schema');
  const schema = rows[0].schema;
  const unlisten = await sql.listen(CHECKPOINT_CHANNEL, (payload) => {
    const [from, name, pos] = payload.split(':');
    if (from !== schema || name !== runnerName || Number(pos) <= known) return;
    known = Number(pos);
    tell();
  });
  const timer = setInterval(() => {
    if (!listeners.size) return;
    readCheckpoint(sql, runnerName).then(
      (p) => {
        if (p > known) {
          known = p;
          tell();
        }
      },
      () => {},
    );
  }, pollMs);
  timer.unref();
  return {
    position: async () => known,
    onAdvance(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    async close() {
      clearInterval(timer);
      listeners.clear();
      await unlisten();
    },
  };
}
