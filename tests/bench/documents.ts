import { PDFDocument, StandardFonts } from 'pdf-lib';
import { Pool } from 'undici';
import { Api } from '../src/support/service';
import { tempDir } from '../src/support/engines';
import { startHttpService } from './http';

/**
 * Documents benchmark (not wired into run.ts; the lead decides where it goes):
 * inline ingest throughput of 2 KB documents over 32 connections, and
 * extraction throughput of a 20-page PDF through the presigned upload flow,
 * each against a spawned service (`npm start` in a child process).
 */
export interface DocumentsBenchRow {
  name: string;
  opsPerSec: number;
  p50Ms: number;
  p99Ms: number;
}

const pct = (sorted: number[], p: number) =>
  sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] : 0;
const round = (n: number, d = 1) => Math.round(n * 10 ** d) / 10 ** d;

function row(name: string, latencies: number[], ops: number, elapsedMs: number): DocumentsBenchRow {
  const s = [...latencies].sort((a, b) => a - b);
  return { name, opsPerSec: round(ops / (elapsedMs / 1000)), p50Ms: round(pct(s, 50)), p99Ms: round(pct(s, 99)) };
}

async function pdf20(): Promise<Uint8Array> {
  const pdf = await PDFDocument.create();
  const font = await pdf.embedFont(StandardFonts.Helvetica);
  for (let p = 0; p < 20; p++) {
    const page = pdf.addPage();
    for (let l = 0; l < 40; l++)
      page.drawText(`Page ${p + 1} line ${l + 1}: the quick brown fox jumps over the lazy dog.`, {
        x: 40,
        y: 780 - l * 18,
        size: 10,
        font,
      });
  }
  return pdf.save();
}

export async function benchDocuments(
  opts: { ingestMs?: number; connections?: number; pdfCount?: number } = {},
): Promise<DocumentsBenchRow[]> {
  const ingestMs = opts.ingestMs ?? 10_000;
  const connections = opts.connections ?? 32;
  const pdfCount = opts.pdfCount ?? 10;
  const dir = tempDir('svc-bench-docs-');
  const svc = await startHttpService(dir.dir);
  const pool = new Pool(svc.url, { connections });
  const rows: DocumentsBenchRow[] = [];
  try {
    const api = new Api(svc.url);
    const acct = await api.newAccount({
      plan: 'enterprise',
      rateLimitPerMinute: 100_000_000,
      creditLimit: 1_000_000_000,
    });
    const key = acct.tenants.live.rootKey;
    const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
    const text = 'lorem ipsum dolor sit amet '.repeat(80).slice(0, 2048);

    // 1. Inline ingest, closed loop.
    const lat: number[] = [];
    const lastIds: string[] = [];
    let ops = 0;
    let seq = 0;
    const started = performance.now();
    const until = started + ingestMs;
    await Promise.all(
      Array.from({ length: connections }, async () => {
        while (performance.now() < until) {
          const t0 = performance.now();
          const res = await pool.request({
            path: '/v1/documents',
            method: 'POST',
            headers,
            body: JSON.stringify({ title: `bench ${seq++}`, text, indexMode: 'TEXT' }),
          });
          const body = (await res.body.json()) as { id: string };
          if (res.statusCode !== 201) throw new Error(`ingest answered ${res.statusCode}`);
          lastIds.push(body.id);
          if (lastIds.length > connections) lastIds.shift();
          lat.push(performance.now() - t0);
          ops += 1;
        }
      }),
    );
    rows.push(row(`documents: inline ingest 2 KB (${connections} connections)`, lat, ops, performance.now() - started));

    // The worker settles the ingested documents behind the writes: let it drain so the PDFs are measured alone.
    for (const id of lastIds) {
      for (let i = 0; i < 3000; i++) {
        const d = await api.get(`/v1/documents/${id}`, key);
        if (d.body?.status !== 'PENDING_INDEX') break;
        await new Promise((r) => setTimeout(r, 20));
      }
    }

    // 2. Extraction: upload a 20-page PDF N times; latency = PUT answered -> INDEXED.
    const file = Buffer.from(await pdf20());
    const ups = [];
    for (let i = 0; i < pdfCount; i++) {
      const r = await api.post('/v1/documents/upload', key, {
        title: `pdf ${i}`,
        fileName: 'bench.pdf',
        fileType: 'application/pdf',
        indexMode: 'TEXT',
      });
      if (r.status !== 201) throw new Error(`upload request answered ${r.status}`);
      ups.push(r.body);
    }
    const settled: Record<string, number> = {};
    const t0 = performance.now();
    const xlat = await Promise.all(
      ups.map(async (up) => {
        const res = await fetch(up.uploadUrl, {
          method: 'PUT',
          headers: { 'content-type': 'application/pdf', [up.requiredHeaderName]: up.requiredHeaderValue },
          body: file,
        });
        if (res.status !== 200) throw new Error(`PUT answered ${res.status}`);
        const put = performance.now();
        for (;;) {
          const d = await api.get(`/v1/documents/${up.id}`, key);
          // Indexing moves to the search projector in a parallel change: any terminal status ends the wait, and is
          // reported.
          if (['INDEXED', 'FAILED', 'SKIPPED', 'STORED'].includes(d.body?.status)) {
            settled[d.body.status] = (settled[d.body.status] ?? 0) + 1;
            return performance.now() - put;
          }
          await new Promise((r) => setTimeout(r, 20));
        }
      }),
    );
    rows.push(
      row(
        `documents: extract 20-page PDF (${file.length} bytes), upload -> terminal status (${Object.entries(settled)
          .map(([k, v]) => `${v} ${k}`)
          .join(', ')})`,
        xlat,
        pdfCount,
        performance.now() - t0,
      ),
    );
  } finally {
    await pool.close();
    await svc.stop();
    dir.remove();
  }
  return rows;
}
