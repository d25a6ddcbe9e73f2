import { readdirSync, readFileSync } from 'node:fs';

/**
 * A bench service's process and the processes it started (the built-in model's processes), from /proc: to freeze
 * one service while another is measured beside it, and to see how much CPU each spent. Empty where /proc is missing.
 */
export function processTree(root: number): number[] {
  const parentOf = new Map<number, number>();
  let dirs: string[] = [];
  try {
    dirs = readdirSync('/proc').filter((d) => /^\d+$/.test(d));
  } catch {
    return [];
  }
  for (const d of dirs) {
    try {
      const st = readFileSync(`/proc/${d}/stat`, 'utf8');
      // Fields after the command's closing parenthesis: state, ppid, ...
      parentOf.set(Number(d), Number(st.slice(st.lastIndexOf(')') + 2).split(' ')[1]));
    } catch {
      /* exited meanwhile */
    }
  }
  const tree = [root];
  for (let i = 0; i < tree.length; i++) for (const [pid, ppid] of parentOf) if (ppid === tree[i]) tree.push(pid);
  return tree;
}

/** SIGSTOP / SIGCONT to a service and everything it started: a stopped tree takes no CPU. */
export function signalTree(root: number, signal: 'SIGSTOP' | 'SIGCONT'): void {
  for (const pid of processTree(root)) {
    try {
      process.kill(pid, signal);
    } catch {
      /* exited meanwhile */
    }
  }
}

/** CPU seconds (user + system) spent so far by the service's own process and by the processes it started. */
export function treeCpuSeconds(root: number): { service: number; children: number } {
  const out = { service: 0, children: 0 };
  for (const pid of processTree(root)) {
    const t = cpuSplitSeconds(pid);
    if (pid === root) out.service += t.user + t.system;
    else out.children += t.user + t.system;
  }
  return out;
}

/**
 * User and system CPU seconds of `pid` alone (its threads included; 0 once it exited), or with `tid` of that one
 * thread of it: system time is the kernel working for it. utime and stime, fields 14 and 15 of stat, in clock ticks
 * of 1/100 s on Linux.
 */
export function cpuSplitSeconds(pid: number, tid?: number): { user: number; system: number } {
  try {
    const st = readFileSync(tid === undefined ? `/proc/${pid}/stat` : `/proc/${pid}/task/${tid}/stat`, 'utf8');
    const f = st.slice(st.lastIndexOf(')') + 2).split(' ');
    return { user: Number(f[11]) / 100, system: Number(f[12]) / 100 };
  } catch {
    return { user: 0, system: 0 };
  }
}
