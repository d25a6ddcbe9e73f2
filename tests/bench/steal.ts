import { readFileSync } from 'node:fs';

/**
 * CPU time the hypervisor gave to other guests ("steal", /proc/stat). On a shared virtual machine a phase with
 * heavy steal runs the same code 20-60 % slower, while a pure CPU loop between phases can look quiet; every
 * measured phase reports the share it lost, so its figures can be read against the machine it ran on.
 */
export interface CpuTimes {
  steal: number;
  total: number;
  /** The kernel's deferred interrupt work (the loopback network among it) and idle time, all CPUs. */
  softirq: number;
  idle: number;
}

export function cpuTimes(): CpuTimes | undefined {
  try {
    const line = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0];
    const xs = line.trim().split(/\s+/).slice(1).map(Number);
    // user nice system idle iowait irq softirq steal (guest and guest_nice are inside user and nice)
    return {
      steal: xs[7] ?? 0,
      total: xs.slice(0, 8).reduce((a, b) => a + b, 0),
      softirq: xs[6] ?? 0,
      idle: xs[3] ?? 0,
    };
  } catch {
    return undefined;
  }
}

/** Percentage of the machine's CPU time stolen between two readings (undefined where /proc/stat is missing). */
export function stealPercent(a: CpuTimes | undefined, b: CpuTimes | undefined): number | undefined {
  if (!a || !b || b.total <= a.total) return undefined;
  return (100 * (b.steal - a.steal)) / (b.total - a.total);
}

/** ", steal 12 %" for a phase's line, or nothing. */
export const stealNote = (pct: number | undefined) => (pct === undefined ? '' : `, steal ${pct.toFixed(0)} %`);
