import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { serverUrl } from '../support/engines';
import { eventually, type Api } from '../support/service';
import { brokers, SKIP_REASON } from './kafka-support';
import { Topology } from './topology';

/**
 * The distributed deployment end to end: command, query, projector and relay
 * as four processes on PostgreSQL + Kafka + LanceDB (+ Elasticsearch when
 * ELASTICSEARCH_URL is set), driven black-box over HTTP through an ingress:
 * records (read-your-writes across processes, versions, lists, lookups,
 * delete), documents (ingest -> extraction -> INDEXED) and search (keyword,
 * semantic, hybrid), with the projector fed by Kafka only.
 */
const skip = !brokers
  ? SKIP_REASON
  : !serverUrl('postgres')
    ? 'DATABASE_URL not set (the split roles share a PostgreSQL)'
    : undefined;

describe.skipIf(!!skip)(
  `split roles on PostgreSQL + Kafka${serverUrl('elasticsearch') ? ' + Elasticsearch' : ''} + ` +
    `LanceDB${skip ? ` (skipped: ${skip})` : ''}`,
  () => {
    let t: Topology;
    let api: Api;
    let root: string;
    let typeName: string;
    const uniq = (p: string) => `${p}_${randomUUID().slice(0, 8)}`;

    beforeAll(async () => {
      t = await Topology.start({ kafkaBrokers: brokers! });
      api = t.api;
      const acct = await api.newAccount({
        plan: 'enterprise',
        rateLimitPerMinute: 1_000_000,
        creditLimit: 1_000_000_000,
      });
      root = acct.tenants.live.rootKey;
      const s = await api.post('/v1/schemas', root, {
        typeName: uniq('Note'),
        displayName: 'Notes',
        allowedSurfaces: ['record'],
        fields: [
          { fieldId: 'title', fieldType: 'string', searchable: true },
          { fieldId: 'body', fieldType: 'string', searchable: true },
          { fieldId: 'category', fieldType: 'string', filterable: true },
        ],
        lookupFields: ['title'],
      });
      expect(s.status, s.text).toBe(201);
      typeName = s.body.typeName;
    }, 300_000);

    afterAll(async () => {
      await t?.stop();
    }, 60_000);

    it('each role runs alone and says so; the projector is fed by Kafka, the relay publishes', async () => {
      for (const role of ['command', 'query', 'projector', 'relay'] as const) {
        const h = await t.role(role).api.get('/healthz');
        expect(h.body).toEqual({ status: 'ok', role });
      }
      const p = await t.readyz('projector');
      expect(p.status, JSON.stringify(p)).toBe('ready');
      expect(p.projections.map((x: any) => x.name).sort()).toEqual([
        'document-worker',
        'read-models',
        'search-index',
        'trigger-runner',
        'webhook-dispatcher',
      ]);
      for (const x of p.projections)
        expect(x.feed).toMatchObject({ transport: 'kafka', active: true, topic: t.env.KAFKA_TOPIC });
      const r = await t.readyz('relay');
      expect(r.relay).toMatchObject({ name: 'kafka-relay', topic: t.env.KAFKA_TOPIC });
      // The command and query roles run no projector and no relay.
      expect((await t.readyz('command')).projections).toEqual([]);
      expect((await t.readyz('query')).relay).toBeUndefined();
    });

    it(
      'records: a write is readable at once from the query process (read-your-writes across processes); ' +
        'versions, lists, lookups, delete',
      async () => {
        const title = uniq('Ledger');
        const c = await api.post('/v1/records', root, {
          typeName,
          externalId: uniq('ext'),
          payload: { title, body: 'Quarterly figures', category: 'finance' },
        });
        expect(c.status, c.text).toBe(201);
        const id = c.body.id;
        // No polling: the command's response waited for the projector's checkpoint (LISTEN/NOTIFY across processes).
        const g = await api.get(`/v1/records/${id}`, root);
        expect(g.status, g.text).toBe(200);
        expect(g.body).toMatchObject({
          id,
          version: 1,
          payload: { title, body: 'Quarterly figures', category: 'finance' },
        });
        const u = await api.patch(`/v1/records/${id}`, root, { payload: { body: 'Quarterly figures, revised' } });
        expect(u.status, u.text).toBe(200);
        const g2 = await api.get(`/v1/records/${id}`, root);
        expect(g2.body.version).toBe(2);
        expect(g2.body.payload.body).toBe('Quarterly figures, revised');
        const v = await api.get(`/v1/records/${id}/versions?limit=100`, root);
        expect(v.status, v.text).toBe(200);
        expect(v.body.data.map((x: any) => x.version)).toEqual(expect.arrayContaining([1, 2]));
        expect(v.body.data).toHaveLength(2);
        const l = await api.get(`/v1/records?type=${typeName}&limit=100`, root);
        expect(l.status, l.text).toBe(200);
        expect(l.body.data.map((x: any) => x.id)).toContain(id);
        const lk = await api.get(
          `/v1/records/lookup?type=${typeName}&field=title&value=${encodeURIComponent(title)}`,
          root,
        );
        expect(lk.status, lk.text).toBe(200);
        expect(JSON.stringify(lk.body)).toContain(id);
        expect((await api.del(`/v1/records/${id}`, root)).status).toBe(204);
        expect((await api.get(`/v1/records/${id}`, root)).status).toBe(404);
        const v2 = await api.get(`/v1/records/${id}/versions?limit=100`, root);
        expect(v2.body.data.length).toBeGreaterThanOrEqual(2);
      },
    );

    it(
      'documents: an inline ingest is extracted and indexed by the projector process, and its text is ' +
        'served by the query process',
      async () => {
        const word = `okapi${randomUUID().slice(0, 6)}`;
        const text = `Field notes: the ${word} lives in the rainforest of the Congo basin.`;
        const d = await api.post('/v1/documents', root, { title: uniq('Doc'), text, indexMode: 'HYBRID' });
        expect(d.status, d.text).toBe(201);
        const done = await eventually(
          async () => {
            const r = await api.get(`/v1/documents/${d.body.id}`, root);
            return ['INDEXED', 'SKIPPED', 'STORED', 'FAILED'].includes(r.body?.status) ? r.body : null;
          },
          90_000,
          100,
        );
        expect(done.status, JSON.stringify(done)).toBe('INDEXED');
        const tx = await api.get(`/v1/documents/${d.body.id}/text`, root);
        expect(tx.status, tx.text).toBe(200);
        expect(tx.body.text).toBe(text);
        const s = await api.post('/v1/search', root, { query: word, mode: 'TEXT' });
        expect(s.status, s.text).toBe(200);
        expect(s.body.results.map((x: any) => x.documentId)).toContain(d.body.id);
      },
    );

    it(
      'search: records become INDEXED through the Kafka-fed search projector and are found by keyword, ' +
        'meaning and both',
      async () => {
        const ids: Record<string, string> = {};
        const docs: Array<[string, Record<string, unknown>]> = [
          [
            'volcano',
            {
              title: 'Volcano eruption',
              body: 'Glowing lava flowed down the northern slope of the volcano after the eruption.',
              category: 'geology',
            },
          ],
          [
            'bread',
            {
              title: 'Sourdough baking',
              body: 'Knead the dough, let it rise overnight, then bake the loaf in a hot oven.',
              category: 'cooking',
            },
          ],
          [
            'kitten',
            {
              title: 'Adopting a kitten',
              body: 'A young cat needs a litter box, toys and regular visits to the veterinarian.',
              category: 'pets',
            },
          ],
        ];
        for (const [k, payload] of docs) {
          const r = await api.post('/v1/records', root, { typeName, payload });
          expect(r.status, r.text).toBe(201);
          ids[k] = r.body.id;
        }
        for (const id of Object.values(ids))
          await eventually(
            async () => (await api.get(`/v1/records/${id}`, root)).body.indexStatus === 'INDEXED',
            90_000,
            100,
          );
        const hits = async (body: Record<string, unknown>) => {
          const r = await api.post('/v1/search', root, body);
          expect(r.status, r.text).toBe(200);
          return r.body.results.map((x: any) => x.documentId) as string[];
        };
        expect((await hits({ query: 'lava eruption', mode: 'TEXT' }))[0]).toBe(ids.volcano);
        expect(await hits({ query: 'sourdough', mode: 'TEXT', filters: { category: 'cooking' } })).toEqual([ids.bread]);
        expect((await hits({ query: 'a pet cat and the vet', mode: 'SEMANTIC' }))[0]).toBe(ids.kitten);
        expect((await hits({ query: 'baking bread in an oven', mode: 'HYBRID' }))[0]).toBe(ids.bread);
      },
    );

    it(
      'lag is exposed: /readyz and /metrics of the projector and the relay show every subscriber caught up, ' +
        'fed from Kafka',
      async () => {
        const head = await eventually(
          async () => {
            const r = await t.readyz('relay');
            return r.relay.lag === 0 ? r.headPosition : null;
          },
          60_000,
          100,
        );
        const p = await eventually(
          async () => {
            const r = await t.readyz('projector');
            return r.projections.every((x: any) => x.position >= head) ? r : null;
          },
          90_000,
          100,
        );
        for (const x of p.projections) {
          expect(x.lag).toBeGreaterThanOrEqual(0);
          expect(x.feed.fromKafka, JSON.stringify(x.feed)).toBeGreaterThan(0);
          expect(x.feed.gapFills, JSON.stringify(x.feed)).toBe(0);
        }
        const m = await t.role('projector').api.get('/metrics');
        expect(m.status).toBe(200);
        expect(m.headers.get('content-type')).toMatch(/^text\/plain/);
        expect(m.text).toMatch(
          /^svc_kafka_consumer_lag_messages\{subscriber="read-models",group="[^"]+",role="projector"\} \d+$/m,
        );
        expect(m.text).toMatch(/^svc_subscriber_lag_events\{subscriber="search-index",role="projector"\} \d+$/m);
        const rm = await t.role('relay').api.get('/metrics');
        expect(rm.text).toMatch(/^svc_subscriber_position\{subscriber="kafka-relay",role="relay"\} \d+$/m);
      },
    );
  },
);
