import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { buildService, loadConfig } from '@svc/deploy';
import { OPERATOR_TOKEN, type Bootstrap } from '../src/support/service';
import { benchAccountInProcess } from './account';
import { closedLoop, type LoadResult } from './load';
import type { Timing } from './raw';
import { BENCH_SCHEMA, createBody } from './workload';

/**
 * The record create with everything but the socket: the service built in this
 * process (buildService: same engines, projections, routes, edge), requests
 * through Fastify's inject (routing, auth, zod, handler, serialisation).
 * Separates the command path's own cost (schema/reservation reads, projection
 * wait) from the network, HTTP parsing and the second process.
 */
export async function inProcessCreate(dataDir: string, t: Timing): Promise<LoadResult> {
  const service = await buildService(
    loadConfig({ DATA_DIR: dataDir, PORT: '0', OPERATOR_TOKEN, LOG_LEVEL: 'silent' } as NodeJS.ProcessEnv),
    () => {},
  );
  try {
    const boot = JSON.parse(readFileSync(join(dataDir, 'bootstrap.json'), 'utf8')) as Bootstrap;
    const headers = { authorization: `Bearer ${boot.tenants.live.rootKey}`, 'content-type': 'application/json' };
    // The bench's account terms (a Free account would be refused with 429 after 60 creates a minute).
    await benchAccountInProcess(service.app, boot);
    const r = await service.app.inject({
      method: 'POST',
      url: '/v1/schemas',
      headers,
      payload: JSON.stringify(BENCH_SCHEMA),
    });
    if (r.statusCode !== 201) throw new Error(`schema create failed: ${r.statusCode} ${r.body}`);
    return await closedLoop({
      ...t,
      // No generator-side yields: they would hand the service batches it does not get from real traffic.
      yieldEveryMs: 0,
      op: async (_w, seq) => {
        const res = await service.app.inject({ method: 'POST', url: '/v1/records', headers, payload: createBody(seq) });
        if (res.statusCode !== 201)
          throw new Error(`inject POST /v1/records ${res.statusCode}: ${res.body.slice(0, 200)}`);
      },
    });
  } finally {
    await service.close();
  }
}
