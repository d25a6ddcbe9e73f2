// Types of pglite-exchange.mjs (plain JavaScript: the database thread runs it without a TypeScript loader).
import type { PGlite } from '@electric-sql/pglite';

export declare function queryInOneExchange<T>(
  db: PGlite,
  text: string,
  params: unknown[] | undefined,
  inTx: boolean,
): Promise<T[]>;
