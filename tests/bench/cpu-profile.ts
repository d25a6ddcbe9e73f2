import { existsSync, readdirSync, readFileSync } from 'node:fs';
/** Summaries of a node:inspector CPU profile, shared by the profiling scripts (profile.ts, profile-search.ts). */
type Node = {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
  children?: number[];
};
export type Profile = { nodes: Node[]; samples: number[]; timeDeltas: number[]; startTime: number; endTime: number };

/** The part of the system a frame belongs to. */
export function area(url: string, fn: string): string {
  if (!url) return fn.startsWith('(') ? fn : '(native/builtin)';
  if ((url.includes('wasm://') || url.startsWith('wasm')) && ['hamming', 'dots', 'dots8'].includes(fn))
    return 'vector kernels (WebAssembly)';
  if (url.includes('wasm://') || url.startsWith('wasm')) return 'PGlite WASM (postgres)';
  if (url.includes('@electric-sql/pglite')) return 'PGlite JS (protocol, parsing)';
  if (url.includes('node_modules/zod')) return 'zod';
  if (
    url.includes('node_modules/fastify') ||
    url.includes('node_modules/find-my-way') ||
    url.includes('node_modules/light-my-request') ||
    url.includes('node_modules/avvio') ||
    url.includes('fast-json-stringify')
  )
    return 'fastify/inject';
  if (url.includes('node_modules/')) return 'other deps: ' + url.split('node_modules/')[1].split('/')[0];
  const m = /\/work\/main\/([^/]+)\/src\/(.+)$/.exec(url.replace('file://', ''));
  if (m) return `svc ${m[1]}/${m[2]}`;
  if (url.startsWith('node:')) return 'node internals';
  return url;
}

/** Prints self time by area and the hottest functions, per operation. */
export function printProfile(profile: Profile, ops: number, hottest = 25) {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const self = new Map<number, number>();
  profile.samples.forEach((id, i) => self.set(id, (self.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0)));
  const total = [...self.values()].reduce((a, b) => a + b, 0);
  const areas = new Map<string, number>();
  const fns = new Map<string, number>();
  for (const [id, us] of self) {
    const n = byId.get(id)!;
    const a = area(n.callFrame.url, n.callFrame.functionName);
    areas.set(a, (areas.get(a) ?? 0) + us);
    const f = `${n.callFrame.functionName || '(anonymous)'}  ${a}:${n.callFrame.lineNumber + 1}`;
    fns.set(f, (fns.get(f) ?? 0) + us);
  }
  const pct = (us: number) => ((100 * us) / total).toFixed(1).padStart(5) + '%';
  const perOp = (us: number) => (us / ops / 1000).toFixed(3).padStart(7) + ' ms/op';
  console.log(
    `\nself time by area (${(total / 1e6).toFixed(1)} s sampled, ${ops} ops -> ` +
      `${(total / ops / 1000).toFixed(2)} ms CPU-wall per op):`,
  );
  for (const [a, us] of [...areas].sort((x, y) => y[1] - x[1]).slice(0, 22))
    console.log(`  ${pct(us)} ${perOp(us)}  ${a}`);
  console.log('\nhottest functions (self):');
  for (const [f, us] of [...fns].sort((x, y) => y[1] - x[1]).slice(0, hottest)) console.log(`  ${pct(us)}  ${f}`);
}

/**
 * CPU ms of each thread of a process (Linux /proc), keyed "main <tid>" or "<name> <tid>", plus "main-system" (the main
 * thread's kernel time).
 */
export function threadCpu(pid: number): Map<string, number> {
  const m = new Map<string, number>();
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      const st = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
      const f = st.slice(st.lastIndexOf(')') + 2).split(' ');
      const name = readFileSync(`/proc/${pid}/task/${tid}/comm`, 'utf8').trim();
      m.set(`${tid === String(pid) ? 'main' : name} ${tid}`, (Number(f[11]) + Number(f[12])) * 10);
      if (tid === String(pid)) m.set('main-system', Number(f[12]) * 10);
    } catch {
      /* a thread that ended meanwhile */
    }
  }
  return m;
}

/** The SQLCENSUS lines a service child printed (cpu-profile-child.mjs), per operation (`unit`: "create", "record"). */
export async function printSqlCensus(output: () => string, ops: number, unit: string): Promise<void> {
  await new Promise((res) => setTimeout(res, 300));
  for (const l of output()
    .split('\n')
    .filter((x) => x.startsWith('SQLCENSUS'))) {
    const m = /^SQLCENSUS ([\d.]+) ms (\d+) calls (.*)$/.exec(l);
    if (m)
      console.log(
        `${(Number(m[1]) / ops).toFixed(4)} ms/${unit}  ${(Number(m[2]) / ops).toFixed(3)} calls/${unit}  ${m[3]}`,
      );
  }
}

/** A profile the child writes to `file`, once it is there and whole (it may be read while still being written). */
async function readWritten<T>(file: string): Promise<T> {
  for (let i = 0; ; i++) {
    try {
      if (existsSync(file)) return JSON.parse(readFileSync(file, 'utf8')) as T;
    } catch (e) {
      if (i >= 100) throw e;
    }
    if (i >= 100) throw new Error(`${file} was not written`);
    await new Promise((res) => setTimeout(res, 100));
  }
}

/** The profile a service child writes to `file` on its second SIGUSR2, printed per operation once written. */
export async function printProfileFile(file: string, ops: number, top = 40): Promise<void> {
  printProfile(await readWritten<Profile>(file), ops, top);
}

type HeapNode = {
  callFrame: { functionName: string; url: string; lineNumber: number };
  selfSize: number;
  children: HeapNode[];
};

/**
 * A sampling heap profile (cpu-profile-child.mjs, SVC_HEAP_PROFILE=1): bytes allocated per operation, by area and by
 * function.
 */
export async function printHeapProfileFile(file: string, ops: number, top = 30): Promise<void> {
  const { head } = await readWritten<{ head: HeapNode }>(file);
  const areas = new Map<string, number>();
  const fns = new Map<string, number>();
  let total = 0;
  const walk = (n: HeapNode) => {
    if (n.selfSize) {
      const a = area(n.callFrame.url, n.callFrame.functionName);
      areas.set(a, (areas.get(a) ?? 0) + n.selfSize);
      const f = `${n.callFrame.functionName || '(anonymous)'}  ${a}:${n.callFrame.lineNumber + 1}`;
      fns.set(f, (fns.get(f) ?? 0) + n.selfSize);
      total += n.selfSize;
    }
    for (const c of n.children) walk(c);
  };
  walk(head);
  const perOp = (b: number) => `${(b / ops).toFixed(0).padStart(7)} B/op`;
  console.log(
    `\nbytes allocated by area (${(total / 2 ** 20).toFixed(1)} MiB sampled, ${ops} ops -> ` +
      `${(total / ops / 1024).toFixed(1)} KiB per op):`,
  );
  for (const [a, b] of [...areas].sort((x, y) => y[1] - x[1]).slice(0, 22)) console.log(`  ${perOp(b)}  ${a}`);
  console.log('\nfunctions allocating most (self):');
  for (const [f, b] of [...fns].sort((x, y) => y[1] - x[1]).slice(0, top)) console.log(`  ${perOp(b)}  ${f}`);
}
