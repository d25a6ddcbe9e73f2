/** A local OTLP/HTTP trace receiver for the tests of traces (docs/operations.md "Traces"). */
import { createServer, type Server } from 'node:http';
import { randomBytes } from 'node:crypto';

export interface Attr {
  key: string;
  value: { stringValue?: string; intValue?: number | string; boolValue?: boolean };
}
export interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes: Attr[];
  links?: Array<{ traceId: string; spanId: string }>;
  /** The resource's attributes (service.name, svc.role), copied onto each span here. */
  resource: Record<string, unknown>;
}

const valueOf = (a: Attr['value']) => a.stringValue ?? (a.intValue !== undefined ? Number(a.intValue) : a.boolValue);
export const attr = (s: OtlpSpan, key: string) => {
  const a = s.attributes.find((x) => x.key === key);
  return a ? valueOf(a.value) : undefined;
};

/** A local OTLP/HTTP receiver: POST /v1/traces with the JSON encoding, every span kept. */
export async function otlpReceiver(): Promise<{ url: string; spans: OtlpSpan[]; close(): Promise<void> }> {
  const spans: OtlpSpan[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (
        req.method !== 'POST' ||
        req.url !== '/v1/traces' ||
        !String(req.headers['content-type']).startsWith('application/json')
      ) {
        res.writeHead(415).end();
        return;
      }
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      for (const rs of body.resourceSpans ?? []) {
        const resource = Object.fromEntries(
          (rs.resource?.attributes ?? []).map((a: Attr) => [a.key, valueOf(a.value)]),
        );
        for (const ss of rs.scopeSpans ?? []) for (const s of ss.spans ?? []) spans.push({ ...s, resource });
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const addr = server.address();
  const port = typeof addr === 'object' && addr ? addr.port : 0;
  return { url: `http://127.0.0.1:${port}`, spans, close: () => new Promise((r) => server.close(() => r())) };
}

/** A caller's own trace context, as a W3C traceparent. */
export function callerContext() {
  const traceId = randomBytes(16).toString('hex');
  const spanId = randomBytes(8).toString('hex');
  return { traceId, spanId, traceparent: `00-${traceId}-${spanId}-01` };
}
