import { constants } from 'node:buffer';

const { MAX_LENGTH } = constants;

/**
 * Strings kept outside the JavaScript heap, as UTF-8 in one growing buffer, read back when a page shows them.
 * The in-memory indexes hold every passage's texts, most of their memory (the keyword index's 100,000 bench
 * passages: 136 MB of a 195 MB heap); on the heap every major collection of the service's thread marked them,
 * and its pauses and marking work grew with the indexes. Texts come from PostgreSQL or LanceDB, valid UTF-8, so
 * they come back exactly (a lone surrogate, which neither store keeps, would come back as U+FFFD).
 */
export class TextArena {
  private buf = Buffer.allocUnsafe(1 << 16);
  private used = 0;
  /** Text i is buf[from[i], from[i + 1]) (doubles: a context's texts may pass 2 GiB, past an Int32Array's reach). */
  private from = new Float64Array(1024);
  private count = 0;
  /** Bytes of freed texts, still in the buffer until `compacted`. */
  garbage = 0;

  /** Stores a text; returns its id. */
  add(text: string): number {
    return this.place(Buffer.byteLength(text, 'utf8'), (at) => this.buf.write(text, at, 'utf8'));
  }

  /** Copies text `id` of another arena here; returns its id here. */
  copy(other: TextArena, id: number): number {
    const a = other.from[id];
    const z = other.from[id + 1];
    return this.place(z - a, (at) => other.buf.copy(this.buf, at, a, z));
  }

  private place(bytes: number, write: (at: number) => number): number {
    if (this.used + bytes > this.buf.length) {
      // A Buffer holds at most buffer.constants.MAX_LENGTH bytes (4 GiB on Node 20): past it the context's load fails
      // with this error (its searches are refused, or answered by LanceDB for vectors) instead of the process running
      // out of memory.
      if (this.used + bytes > MAX_LENGTH)
        throw new RangeError(`text arena: over ${MAX_LENGTH} bytes of passage text in one context`);
      const grown = Buffer.allocUnsafe(Math.min(MAX_LENGTH, Math.max(this.used + bytes, this.buf.length * 2)));
      this.buf.copy(grown, 0, 0, this.used);
      this.buf = grown;
    }
    if (this.count + 2 > this.from.length) {
      const grown = new Float64Array(this.from.length * 2);
      grown.set(this.from);
      this.from = grown;
    }
    this.used += write(this.used);
    this.from[++this.count] = this.used;
    return this.count - 1;
  }

  /** The text of an id ('' for -1). */
  get(id: number): string {
    return id < 0 ? '' : this.buf.toString('utf8', this.from[id], this.from[id + 1]);
  }

  /** Counts a text no longer used as garbage (its bytes stay until `compacted`). */
  free(id: number) {
    if (id >= 0) this.garbage += this.from[id + 1] - this.from[id];
  }

  /** Bytes held (freed texts included until `compacted`). */
  get bytes(): number {
    return this.used;
  }

  /** Whether freed texts are more than half the buffer (and over 1 MiB): time to compact. */
  get wasteful(): boolean {
    return this.garbage > 1 << 20 && this.garbage * 2 > this.used;
  }

  /** Gives back the room that doubling left past the end (once a context is loaded). */
  trim() {
    if (this.buf.length - this.used < 1 << 20) return;
    const exact = Buffer.allocUnsafe(this.used);
    this.buf.copy(exact, 0, 0, this.used);
    this.buf = exact;
  }
}

/**
 * A new arena with the texts of `old` that `lists` name (each list's first n ids; -1 stays), their new ids written
 * back.
 */
export function compacted(old: TextArena, lists: Int32Array[], n: number): TextArena {
  const next = new TextArena();
  for (const ids of lists) for (let i = 0; i < n; i++) if (ids[i] >= 0) ids[i] = next.copy(old, ids[i]);
  next.trim();
  return next;
}
