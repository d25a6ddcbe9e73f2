// Worker thread of tests/bench/changes.ts: opens the change streams and parses them (eventsource-parser), off the
// thread that sends the writes, so the sender's schedule does not wait on the parsing of every stream's events.
// With `drain` (the throughput slices) it only reads every byte on bare sockets, not parsed, and reports how many at
// 'stop'.
import http from 'node:http';
import net from 'node:net';
import { parentPort, workerData } from 'node:worker_threads';
import { createParser } from 'eventsource-parser';

const { url, key, streams, query, label, drain } = workerData;
let bytes = 0;
const now = () => performance.timeOrigin + performance.now();
/** [n, arrival (epoch ms)] of every record.created event of the measured run, by every stream. */
const arrivals = [];
const requests = [];

/** Drain mode: a bare socket that sends the request and counts the bytes, so the load generator spends as little CPU
 * as it can (no HTTP parser, no chunk events per stream) on the 2 CPUs it shares with the service. */
function openRaw() {
  return new Promise((resolve, reject) => {
    const u = new URL(`${url}/v1/changes?${query}`);
    const sock = net.connect(Number(u.port), u.hostname, () =>
      sock.write(
        `GET ${u.pathname}${u.search} HTTP/1.1\r\nHost: ${u.host}\r\nAuthorization: Bearer ` +
          `${key}\r\nAccept: text/event-stream\r\n\r\n`,
      ),
    );
    let first = true;
    sock.on('data', (b) => {
      bytes += b.length;
      if (!first) return;
      first = false;
      const status = b.toString('latin1', 0, 16).split(' ')[1];
      if (status === '200') resolve();
      else reject(new Error(`stream: ${status}`));
    });
    sock.on('error', (e) => (first ? reject(e) : undefined));
    requests.push(sock);
  });
}

function open() {
  if (drain) return openRaw();
  return new Promise((resolve, reject) => {
    const parser = createParser({
      onEvent: (m) => {
        if (m.event !== 'record.created') return;
        const at = now();
        const d = JSON.parse(m.data);
        const p = d.entity?.payload;
        if (p && typeof p.n === 'number' && typeof p.label === 'string' && p.label.startsWith(label))
          arrivals.push(p.n, at);
      },
    });
    const req = http.get(
      `${url}/v1/changes?${query}`,
      { headers: { authorization: `Bearer ${key}`, accept: 'text/event-stream' } },
      (res) => {
        if (res.statusCode !== 200) return reject(new Error(`stream: ${res.statusCode}`));
        if (drain) res.on('data', (b) => (bytes += b.length));
        else {
          res.setEncoding('utf8');
          res.on('data', (t) => parser.feed(t));
        }
        res.on('error', () => {});
        resolve();
      },
    );
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
