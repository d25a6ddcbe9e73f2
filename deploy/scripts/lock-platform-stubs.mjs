#!/usr/bin/env node
// Our build machines' registry serves only linux-x64 builds of packages that ship
// per-platform native binaries (rollup, lancedb), so `npm install` writes a lock
// without the other platforms' optional entries and `npm ci` then refuses it.
// This adds those entries as optional stubs (os/cpu from the package name), which
// npm skips on a machine they don't match. Run it after `npm install` changes the lock.
import { readFileSync, writeFileSync } from 'node:fs';

const file = new URL('../../package-lock.json', import.meta.url);
const lock = JSON.parse(readFileSync(file, 'utf8'));
const pkgs = lock.packages;
const OS = ['android', 'darwin', 'freebsd', 'linux', 'openbsd', 'openharmony', 'win32', 'netbsd', 'sunos', 'aix'];
const CPU = {
  'arm-eabi': 'arm',
  arm64: 'arm64',
  arm: 'arm',
  x64: 'x64',
  ia32: 'ia32',
  loong64: 'loong64',
  ppc64: 'ppc64',
  riscv64: 'riscv64',
  s390x: 's390x',
};
let added = 0;
for (const [path, meta] of Object.entries(pkgs)) {
  for (const [name, version] of Object.entries(meta.optionalDependencies ?? {})) {
    const key = `node_modules/${name}`;
    if (pkgs[key] || pkgs[`${path}/node_modules/${name}`]) continue;
    const tail = name.split('/').pop();
    const os = OS.find((o) => tail.includes(`-${o}-`));
    const cpuKey = Object.keys(CPU).find((c) => tail.includes(`-${c}`));
    if (!os || !cpuKey) continue;
    pkgs[key] = {
      version: String(version).replace(/^[\^~]/, ''),
      ...(meta.dev ? { dev: true } : {}),
      optional: true,
      os: [os],
      cpu: [CPU[cpuKey]],
      ...(/-musl|musleabihf/.test(tail) ? { libc: ['musl'] } : /-gnu|gnueabihf/.test(tail) ? { libc: ['glibc'] } : {}),
    };
    added += 1;
  }
}
lock.packages = Object.fromEntries(
  Object.entries(pkgs).sort(([a], [b]) => (a === '' ? -1 : b === '' ? 1 : a.localeCompare(b))),
);
writeFileSync(file, JSON.stringify(lock, null, 2) + '\n');
console.log(`lock-platform-stubs: added ${added} optional platform entries`);
