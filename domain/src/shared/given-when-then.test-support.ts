import { deepStrictEqual, fail } from 'node:assert/strict';
import { type DomainEvent, type EventMetadata, InternalError, ServiceError } from '@svc/contracts';
import type { Decider } from './decider';
import type { PayloadSealing } from './sealing';
import { isSealed, SEALED_KEY } from '../records/sealed';
import { ownValue } from '../records/own-value';

/**
 * given(decider, history).when(command).then(events) — a decider's unit test
 * without an engine. `then` compares as JSON (keys holding undefined are
 * ignored); `thenThrows` checks the ServiceError code of a refusal
 * ('INTERNAL' for an InternalError: a command the caller could never send).
 * Imported by specs through its path (not exported from the package); a test-support file: left out of the
 * build (tsconfig.build.json) and imported by nothing but specs (`npm run lint:deps`), so node:assert never ships.
 */
export const TEST_METADATA: EventMetadata = {
  tenantId: 't1',
  contextId: 'c1',
  accountId: 'a1',
  actorKeyId: 'k1',
  userId: null,
  requestId: 'r1',
  occurredAt: '2026-01-01T00:00:00.000Z',
  schemaVersion: 1,
};

const asJson = (v: unknown) => JSON.parse(JSON.stringify(v)) as unknown;

function codeOf(f: () => unknown): string | null {
  try {
    f();
  } catch (e) {
    if (e instanceof ServiceError) return e.code;
    if (e instanceof InternalError) return 'INTERNAL';
    throw e;
  }
  return null;
}

export function given<S, C, E extends DomainEvent>(
  decider: Decider<S, C, E>,
  history: readonly E[] = [],
  opts: { metadata?: EventMetadata } = {},
) {
  const metadata = opts.metadata ?? TEST_METADATA;
  const state = (): S => history.reduce((s, e) => decider.evolve(s, e, metadata), decider.initialState());
  return {
    state,
    when(command: C) {
      const events = () => decider.decide(command, state());
      return {
        events,
        /** The state after the decided events. */
        state: () => events().reduce((s, e) => decider.evolve(s, e, metadata), state()),
        then(expected: readonly E[]) {
          deepStrictEqual(asJson(events()), asJson(expected));
        },
        thenThrows(code: string) {
          const got = codeOf(events);
          if (got !== code) fail(`expected a refusal with ${code}, got ${got === null ? 'events' : got}`);
        },
      };
    },
  };
}

/**
 * A readable stand-in for the sealer: a sensitive value `v` is stored as
 * `{ $sealed: 'sealed:<json>' }` and blind-indexed as `blind:<scope>/<field>=<json>`.
 */
export const testSealing: PayloadSealing = {
  seal(def, payload) {
    const out = { ...payload };
    for (const f of def.fields ?? []) {
      const v = ownValue(out, f.fieldId);
      if (f.sensitive && v !== undefined && v !== null && !isSealed(v))
        out[f.fieldId] = { [SEALED_KEY]: `sealed:${JSON.stringify(v)}` };
    }
    return out;
  },
  unseal(payload) {
    const out = { ...payload };
    for (const [k, v] of Object.entries(out))
      if (isSealed(v)) out[k] = JSON.parse(v[SEALED_KEY].slice('sealed:'.length));
    return out;
  },
  blind(scope, def, payload) {
    const out: Record<string, string> = {};
    for (const f of def.fields ?? []) {
      const v = ownValue(payload, f.fieldId);
      if (f.sensitive && v !== undefined && v !== null)
        out[f.fieldId] = `blind:${scope.join('/')}/${f.fieldId}=${JSON.stringify(v)}`;
    }
    return out;
  },
};
