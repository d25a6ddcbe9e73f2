// The sandbox thread (docs/scripts.md): runs one script version at a time in a fresh QuickJS runtime and
// context (quickjs-emscripten, WebAssembly), with a memory limit, a stack limit and an interrupt handler on a
// wall-clock deadline. Host calls (records / documents / folders) are messages to the main thread, which runs
// them against the execution's staged writes; their answers come back as messages. Plain .mjs: no TypeScript
// loader runs in the thread. Nothing in here trusts a value the script produced except as a JSON string.
import { parentPort } from 'node:worker_threads';
import { getQuickJS } from 'quickjs-emscripten';

const QJS = await getQuickJS();

// Defines the host globals from one private `call` function (never itself reachable from the script): each
// method serialises its arguments, awaits the host's JSON answer and parses it. Captured before the script
// runs, so replacing JSON or the globals' prototypes later changes nothing on the host's side.
const BOOTSTRAP =
  `(function (call, methods) {
  'use strict';
  const parse = JSON.parse, stringify = JSON.stringify, ` +
  `define = Object.defineProperty, freeze = Object.freeze, keys = Object.keys;
  for (const name of ` +
  `keys(methods)) {
    const api = {};
    for (const m of methods[name]) {
      define(api, m, { ` +
  `enumerable: true, value: async function (...args) {
        const out = await call(name, m, ` +
  `stringify(args) ?? '[]');
        return out === undefined ? undefined : parse(out);
      } });
    ` +
  `}
    define(globalThis, name, { value: freeze(api), enumerable: false, writable: false, configurable: ` +
  `false });
  }
  return freeze(async function run(fn, inputJson) {
    const value = await ` +
  `fn(parse(inputJson));
    return stringify(value);
  });
})`;

/** Messages from the main thread to a running execution's host-call answers. */
let answer = () => {};

// The engine is loaded: a job's clock starts now (the main thread times it from here).
parentPort.postMessage({ kind: 'ready', runId: 0 });
parentPort.on('message', (msg) => {
  if (msg.kind === 'run')
    void execute(msg).then((out) => parentPort.postMessage({ kind: 'done', runId: msg.runId, ...out }));
  else if (msg.kind === 'check') parentPort.postMessage({ kind: 'checked', runId: msg.runId, ...check(msg.source) });
  else if (msg.kind === 'answer') answer(msg);
});

/** Compiles the source as a module without running it: a syntax error names its line. */
function check(source) {
  const vm = QJS.newContext();
  try {
    const r = vm.evalCode(source, 'script.mjs', { type: 'module', compileOnly: true });
    if (r.error) {
      const e = vm.dump(r.error);
      r.error.dispose();
      // A compiled module is sometimes handed back on the error side (quickjs-emscripten 0.32, compileOnly): only a
      // thrown error object (with a message) is a compile error; the execution reports anything else.
      if (typeof e !== 'object' || e === null || typeof e.message !== 'string') return { ok: true };
      return {
        ok: false,
        message: `${e.name ?? 'SyntaxError'}: ${e.message}${e.lineNumber ? ` (line ${e.lineNumber})` : ''}`,
      };
    }
    r.value.dispose();
    return { ok: true };
  } finally {
    vm.dispose();
  }
}

const fail = (errorCode, message, extra = {}) => ({ ok: false, errorCode, message, ...extra });

async function execute({ runId, source, inputJson, limits, methods: hostMethods }) {
  const deadline = Date.now() + limits.timeoutMs;
  const rt = QJS.newRuntime();
  rt.setMemoryLimit(limits.memoryBytes);
  rt.setMaxStackSize(limits.stackBytes);
  let timedOut = false;
  rt.setInterruptHandler(() => {
    if (Date.now() > deadline) timedOut = true;
    return timedOut;
  });
  const vm = rt.newContext();
  const pending = new Map();
  let hostCalls = 0;
  let nextCall = 0;
  /** Set when a budget is spent: the execution fails with it whatever the script does next. */
  let terminal = null;
  /** errorCodes the host gave to refused calls: an escaping error with one of them fails with that code. */
  const hostCodes = new Set();
  let wake = () => {};
  answer = (msg) => {
    if (msg.runId !== runId) return;
    const deferred = pending.get(msg.callId);
    if (!deferred) return;
    pending.delete(msg.callId);
    if (msg.ok) {
      if (msg.json === undefined) deferred.resolve();
      else {
        const s = vm.newString(msg.json);
        deferred.resolve(s);
        s.dispose();
      }
    } else {
      hostCodes.add(msg.errorCode);
      if (msg.terminal) terminal ??= { errorCode: msg.errorCode, message: msg.message, details: msg.details };
      const err = vm.newError({ name: 'Error', message: msg.message });
      const code = vm.newString(msg.errorCode);
      vm.setProp(err, 'code', code);
      code.dispose();
      deferred.reject(err);
      err.dispose();
    }
    deferred.dispose();
    wake();
  };
  const call = vm.newFunction('call', (objH, methodH, argsH) => {
    const obj = vm.typeof(objH) === 'string' ? vm.getString(objH) : '';
    const method = vm.typeof(methodH) === 'string' ? vm.getString(methodH) : '';
    const args = vm.typeof(argsH) === 'string' ? vm.getString(argsH) : '[]';
    const deferred = vm.newPromise();
    hostCalls += 1;
    if (hostCalls > limits.maxHostCalls) {
      terminal ??= {
        errorCode: 'RESOURCE_LIMIT_EXCEEDED',
        message: `The script made more than ${limits.maxHostCalls} host calls`,
      };
      const err = vm.newError({ name: 'Error', message: terminal.message });
      deferred.reject(err);
      err.dispose();
      const h = deferred.handle;
      return h;
    }
    const callId = ++nextCall;
    pending.set(callId, deferred);
    parentPort.postMessage({ kind: 'call', runId, callId, obj, method, args });
    return deferred.handle;
  });
  const started = Date.now();
  const finish = (out) => {
    answer = () => {};
    for (const d of pending.values()) d.dispose();
    pending.clear();
    try {
      call.dispose();
      vm.dispose();
      rt.dispose();
    } catch {
      // A runtime that ran out of memory may not free cleanly; the thread is replaced after this answer.
      out.recycle = true;
    }
    return { ...out, hostCalls, durationMs: Date.now() - started };
  };
  const errorOf = (handle) => {
    let e;
    try {
      e = vm.dump(handle);
    } catch {
      e = undefined;
    }
    handle.dispose();
    if (timedOut) return fail('TIMEOUT', `The script ran longer than ${limits.timeoutMs} ms`);
    if (terminal)
      return fail(terminal.errorCode, terminal.message, terminal.details ? { details: terminal.details } : {});
    const message = typeof e === 'object' && e !== null ? String(e.message ?? e.name ?? 'Script error') : String(e);
    if (/out of memory|string too long|invalid array buffer length/i.test(message))
      return fail(
        'RESOURCE_LIMIT_EXCEEDED',
        `The script exceeded its ${Math.round(limits.memoryBytes / 1048576)} MiB memory limit`,
      );
    if (/stack overflow|call stack size/i.test(message))
      return fail('RESOURCE_LIMIT_EXCEEDED', 'The script exceeded its stack size limit (recursion too deep)');
    const code = typeof e === 'object' && e !== null && typeof e.code === 'string' ? e.code : undefined;
    if (code && hostCodes.has(code)) return fail(code, message);
    return fail('SCRIPT_ERROR', message);
  };
  try {
    // Host globals first, then the module; a module that imports anything fails to load (no module loader).
    const boot = vm.evalCode(BOOTSTRAP, 'bootstrap.js');
    if (boot.error) return finish(errorOf(boot.error));
    const methods = vm.unwrapResult(vm.evalCode(`(${JSON.stringify(hostMethods ?? {})})`, 'methods.js'));
    const runFn = vm.callFunction(boot.value, vm.undefined, call, methods);
    methods.dispose();
    boot.value.dispose();
    if (runFn.error) return finish(errorOf(runFn.error));
    const mod = vm.evalCode(source, 'script.mjs', { type: 'module' });
    if (mod.error) {
      runFn.value.dispose();
      return finish(errorOf(mod.error));
    }
    const jobs = rt.executePendingJobs();
    if (jobs.error) {
      mod.value.dispose();
      runFn.value.dispose();
      return finish(errorOf(jobs.error));
    }
    const loaded = vm.getPromiseState(mod.value);
    if (loaded.type === 'rejected') {
      mod.value.dispose();
      runFn.value.dispose();
      return finish(errorOf(loaded.error));
    }
    if (loaded.type === 'pending') {
      mod.value.dispose();
      runFn.value.dispose();
      return finish(fail('SCRIPT_ERROR', 'The module did not finish loading (top-level await is not supported)'));
    }
    const fn = vm.getProp(loaded.value, 'default');
    if (loaded.value !== mod.value) loaded.value.dispose();
    mod.value.dispose();
    if (vm.typeof(fn) !== 'function') {
      fn.dispose();
      runFn.value.dispose();
      return finish(fail('SCRIPT_ERROR', 'The module must export a function as default'));
    }
    const input = vm.newString(inputJson);
    const called = vm.callFunction(runFn.value, vm.undefined, fn, input);
    input.dispose();
    fn.dispose();
    runFn.value.dispose();
    if (called.error) return finish(errorOf(called.error));
    const promise = called.value;
    const timer = setTimeout(() => wake(), Math.max(0, deadline - Date.now()) + 5);
    try {
      for (;;) {
        const ran = rt.executePendingJobs();
        if (ran.error) {
          promise.dispose();
          return finish(errorOf(ran.error));
        }
        if (terminal || timedOut) {
          promise.dispose();
          return finish(
            timedOut
              ? fail('TIMEOUT', `The script ran longer than ${limits.timeoutMs} ms`)
              : fail(terminal.errorCode, terminal.message, terminal.details ? { details: terminal.details } : {}),
          );
        }
        const state = vm.getPromiseState(promise);
        // A host call the script did not await is waited for: its write belongs to this transaction.
        if (state.type === 'fulfilled' && pending.size > 0) state.value.dispose();
        else if (state.type === 'fulfilled') {
          const json = vm.typeof(state.value) === 'string' ? vm.getString(state.value) : undefined;
          state.value.dispose();
          promise.dispose();
          return finish({ ok: true, json });
        }
        if (state.type === 'rejected') {
          promise.dispose();
          return finish(errorOf(state.error));
        }
        if (Date.now() > deadline) {
          promise.dispose();
          return finish(fail('TIMEOUT', `The script ran longer than ${limits.timeoutMs} ms`));
        }
        // Pending: wait for a host answer (or the deadline; a promise nothing will settle ends there).
        await new Promise((r) => (wake = r));
      }
    } finally {
      clearTimeout(timer);
    }
  } catch (e) {
    return finish(
      fail('INTERNAL', e instanceof Error ? (process.env.SANDBOX_DEBUG ? e.stack : e.message) : String(e), {
        recycle: true,
      }),
    );
  }
}
