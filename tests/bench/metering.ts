import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildService, loadConfig } from '@svc/deploy';
import { OPERATOR_TOKEN } from '../src/support/service';
import { BENCH_SCHEMA, createBody } from './workload';

/**
 * What metering costs the write path (docs/api.md "Usage"): the same record
 * creates (or patches) through the service built in this process (Fastify
 * inject, 32 concurrent clients), with metering on and off (`meter.enabled`:
 * no UsageMetered appends, the credit gate passes everything), alternating on
 * fresh data directories. CPU per operation is the steadier figure on a shared
 * machine.
 *
 *   npx tsx tests/bench/metering.ts [rounds=3] [ops=1500] [create|patch]
 */
const rounds = Number(process.argv[2] ?? 3);
const N = Number(process.argv[3] ?? 1500);
const op = process.argv[4] === 'patch' ? 'patch' : 'create';
const results: Record<'on' | 'off', Array<{ cpuMsPerOp: number; opsPerSec: number }>> = { on: [], off: [] };

for (let i = 0; i < rounds; i++) {
  for (const mode of i % 2 ? (['off', 'on'] as const) : (['on', 'off'] as const)) {
    const dir = mkdtempSync(join(tmpdir(), 'svc-metering-bench-'));
    const service = await buildService(
      loadConfig({ DATA_DIR: dir, PORT: '0', OPERATOR_TOKEN, LOG_LEVEL: 'silent' } as NodeJS.ProcessEnv),
      () => {},
    );
    try {
      service.meter.enabled = mode === 'on';
      const acct = await service.app.inject({
        method: 'POST',
        url: '/operator/accounts',
        headers: { authorization: `Bearer ${OPERATOR_TOKEN}`, 'content-type': 'application/json' },
        payload: JSON.stringify({ plan: 'enterprise', rateLimitPerMinute: 100_000_000, creditLimit: 1_000_000_000 }),
      });
      const headers = {
        authorization: `Bearer ${JSON.parse(acct.body).tenants.live.rootKey}`,
        'content-type': 'application/json',
      };
      const s = await service.app.inject({
        method: 'POST',
        url: '/v1/schemas',
        headers,
        payload: JSON.stringify(BENCH_SCHEMA),
      });
      if (s.statusCode !== 201) throw new Error(s.body);
      const ids: string[] = [];
      let seq = 0;
      const one = async () => {
        const n = seq++;
        if (op === 'patch' && ids.length) {
          const res = await service.app.inject({
            method: 'PATCH',
            url: `/v1/records/${ids[n % ids.length]}`,
            headers,
            payload: JSON.stringify({ payload: { qty: n } }),
          });
          if (res.statusCode !== 200) throw new Error(`${res.statusCode}: ${res.body.slice(0, 200)}`);
          return;
        }
        const res = await service.app.inject({ method: 'POST', url: '/v1/records', headers, payload: createBody(n) });
        if (res.statusCode !== 201) throw new Error(`${res.statusCode}: ${res.body.slice(0, 200)}`);
        ids.push(JSON.parse(res.body).id);
      };
      const loop = async (count: number) => {
        const end = seq + count;
        await Promise.all(
          Array.from({ length: 32 }, async () => {
            while (seq < end) await one();
          }),
        );
      };
      await loop(op === 'patch' ? 200 : 300); // warm-up (and the records a patch run changes)
      const c0 = process.cpuUsage();
      const t0 = performance.now();
      await loop(N);
      const cpu = process.cpuUsage(c0);
      const r = {
        cpuMsPerOp: Number(((cpu.user + cpu.system) / 1000 / N).toFixed(2)),
        opsPerSec: Math.round(N / ((performance.now() - t0) / 1000)),
      };
      results[mode].push(r);
      console.log(`${op} metering ${mode}: ${r.cpuMsPerOp} cpu-ms/op, ${r.opsPerSec} op/s`);
    } finally {
      await service.close();
      rmSync(dir, { recursive: true, force: true });
    }
  }
}
const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
const onOff = (k: 'opsPerSec' | 'cpuMsPerOp') =>
  (mean(results.on.map((r) => r[k])) / mean(results.off.map((r) => r[k]))).toFixed(2);
console.log(`${op}: on/off throughput ${onOff('opsPerSec')}x, CPU per op ${onOff('cpuMsPerOp')}x`);
