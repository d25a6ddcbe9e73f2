// One member of the built-in embedding model's pool (see BuiltinEmbedder in embeddings.ts): a child
// process running bge-small-en-v1.5 (onnxruntime-node).
//
// Plain JavaScript on purpose: the child is started with no TypeScript loader
// under every runner (tsx, vitest, plain node), and this file needs none. Its
// settings (SVC_EMBED_WORKER, JSON):
//
//   { model: 'bge', dir, threads, nice } bge-small-en-v1.5 (ONNX, onnxruntime-node CPU, `threads` intra-op threads;
//   bge.mjs),
//                                         at niceness `nice` once loaded
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

// Settings in SVC_EMBED_WORKER; messages over IPC (serialization 'advanced').
const workerData = JSON.parse(process.env.SVC_EMBED_WORKER || '{}');
const post = (m) => process.send(m);
const onMessage = (f) => process.on('message', f);
// The service went away: so does its model process.
process.on('disconnect', () => process.exit(0));

const model = (async () => {
  if (workerData?.model !== 'bge') throw new Error(`unknown built-in model ${JSON.stringify(workerData?.model)}`);
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
})();
// An unhandled rejection would kill the process before any request could report it.
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
