import type { Api } from './service';

/** A record type whose records the traffic writes (text fields: searchable). */
export const NOTE_SCHEMA = {
  typeName: 'rbnote',
  displayName: 'Rebuild note',
  allowedSurfaces: ['record'],
  indexMode: 'TEXT',
  fields: [
    { fieldId: 'title', fieldType: 'string', required: true },
    { fieldId: 'body', fieldType: 'string', searchable: true },
    { fieldId: 'n', fieldType: 'number' },
  ],
};

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Clients going on during an online rebuild: readers (a record by id, the first page of the list) and writers
 * (record creates), each answer checked. A write acknowledged (201) is readable at once (read-your-writes), so
 * readers read acknowledged records too. Latencies of reads are kept for percentiles.
 */
export class Traffic {
  reads = 0;
  readonly failedReads: string[] = [];
  readonly acked: string[] = [];
  /** The word only the body of each acknowledged record holds (TEXT search finds it by that word). */
  readonly words = new Map<string, string>();
  readonly failedWrites: string[] = [];
  readonly latencies: { byId: number[]; list: number[] } = { byId: [], list: [] };
  private running = false;
  private loops: Promise<void>[] = [];

  constructor(
    private readonly api: Api,
    private readonly token: string,
    private readonly readable: string[],
    private readonly o: { readers?: number; writers?: number; writePauseMs?: number; tag?: string } = {},
  ) {}

  start(): this {
    this.running = true;
    for (let i = 0; i < (this.o.readers ?? 3); i++) this.loops.push(this.reader(i));
    for (let i = 0; i < (this.o.writers ?? 1); i++) this.loops.push(this.writer(i));
    return this;
  }

  async stop(): Promise<void> {
    this.running = false;
    await Promise.all(this.loops);
  }

  private async reader(k: number) {
    for (let i = k; this.running; i++) {
      const pool = this.acked.length && i % 2 ? this.acked : this.readable;
      const started = performance.now();
      if (i % 3 === 2) {
        const r = await this.api
          .get(`/v1/records?type=${NOTE_SCHEMA.typeName}&limit=50`, this.token)
          .catch((e) => ({ status: 0, text: String(e) }) as const);
        this.latencies.list.push(performance.now() - started);
        if (r.status !== 200) this.failedReads.push(`list: ${r.status} ${r.text.slice(0, 200)}`);
      } else {
        const id = pool[(i * 7919) % pool.length];
        const r = await this.api
          .get(`/v1/records/${id}`, this.token)
          .catch((e) => ({ status: 0, text: String(e) }) as const);
        this.latencies.byId.push(performance.now() - started);
        if (r.status !== 200) this.failedReads.push(`${id}: ${r.status} ${r.text.slice(0, 200)}`);
      }
      this.reads += 1;
    }
  }

  private async writer(k: number) {
    for (let i = 0; this.running; i++) {
      const n = this.acked.length + this.failedWrites.length;
      const word = `rb${this.o.tag ?? ''}w${k}x${i}`;
      const r = await this.api
        .post('/v1/records', this.token, {
          typeName: NOTE_SCHEMA.typeName,
          payload: { title: `during ${k}-${i}`, body: `written while rebuilding ${word}`, n },
        })
        .catch((e) => ({ status: 0, text: String(e), body: undefined }) as const);
      if (r.status === 201) {
        this.acked.push(r.body.id);
        this.words.set(r.body.id, word);
      } else this.failedWrites.push(`${r.status} ${r.text.slice(0, 200)}`);
      if (this.o.writePauseMs) await sleep(this.o.writePauseMs);
    }
  }
}

export const percentile = (xs: number[], p: number) => {
  if (!xs.length) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
};
