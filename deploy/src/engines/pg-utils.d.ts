// node-postgres exports its lib/ files ("./lib/*" in its package.json); @types/pg declares only the main module.
declare module 'pg/lib/utils.js' {
  /** How node-postgres turns a JS value into a text-format parameter (arrays as array literals, objects as JSON). */
  export function prepareValue(value: unknown): string | Buffer | null;
}
