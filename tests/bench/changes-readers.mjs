// Worker thread of tests/bench/changes.ts: opens the change streams and parses them (eventsource-parser), off the
// thread that sends the writes, so the sender's schedule does not wait on the parsing of every stream's events.
// With `drain` (the throughput slices) it only reads every byte, not parsed, and reports how many at 'stop'.
import http from 'node:http';
import { parentPort, workerData } from 'node:worker_threads';
import { createParser } from 'eventsource-parser';

const { url, key, streams, query, label, drain } = workerData;
let bytes = 0;
const now = () => performance.timeOrigin + performance.now();
/** [n, arrival (epoch ms)] of every record.created event of the measured run, by every stream. */
const arrivals = [];
const requests = [];

function open() {
  return new Promise((resolve, reject) => {
    const parser = createParser({
      onEvent: (m) => {
        if (m.event !== 'record.created') return;
        const at = now();
        const d = JSON.parse(m.data);
        const p = d.entity?.payload;
        if (p && typeof p.n === 'number' && typeof p.label === 'string' && p.label.startsWith(label)) arrivals.push(p.n, at);
      },
    });
    const req = http.get(`${url}/v1/changes?${query}`, { headers: { authorization: `Bearer ${key}`, accept: 'text/event-stream' } }, (res) => {
      if (res.statusCode !== 200) return reject(new Error(`stream: ${res.statusCode}`));
      if (drain) res.on('data', (b) => (bytes += b.length));
      else {
        res.setEncoding('utf8');
        res.on('data', (t) => parser.feed(t));
      }
      res.on('error', () => {});
      resolve();
    });
    req.on('error', (e) => (e.message.includes('socket hang up') ? undefined : reject(e)));
    requests.push(req);
  });
}

for (let i = 0; i < streams; i++) await open();
parentPort.postMessage({ open: true });
parentPort.on('message', (m) => {
  if (m === 'count') parentPort.postMessage({ count: arrivals.length / 2 });
  if (m === 'stop') {
    for (const r of requests) r.destroy();
    parentPort.postMessage({ arrivals: Float64Array.from(arrivals), bytes });
  }
});
