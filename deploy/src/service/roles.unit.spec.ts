import { describe, expect, it } from 'vitest';
import type { Role } from '../config';
import { ROLES, servesApi, servesCommands, servesQueries } from './roles';

const roles = Object.keys(ROLES) as Role[];
const only = (...names: Role[]) => Object.fromEntries(roles.map((r) => [r, names.includes(r)]));
const each = (f: (r: Role) => unknown) => Object.fromEntries(roles.map((r) => [r, f(r)]));

/** The role table says what the role conditionals of buildService said (docs/operations.md "Roles"). */
describe('ROLES', () => {
  it('serves the write API in all and command, the read API in all and query', () => {
    expect(each((r) => servesCommands(ROLES[r]))).toEqual(only('all', 'command'));
    expect(each((r) => servesQueries(ROLES[r]))).toEqual(only('all', 'query'));
    expect(each((r) => servesApi(ROLES[r]))).toEqual(only('all', 'command', 'query'));
  });
  it('runs the log subscribers in all and projector, the relay in relay (and in all with Kafka)', () => {
    expect(each((r) => ROLES[r].projectors)).toEqual(only('all', 'projector'));
    expect(each((r) => ROLES[r].relay)).toEqual({
      all: 'when-configured',
      command: false,
      query: false,
      projector: false,
      relay: 'required',
    });
  });
  it('opens search where it is served or indexed, and warms the model where it is served', () => {
    expect(each((r) => ROLES[r].search)).toEqual(only('all', 'query', 'projector'));
    expect(each((r) => ROLES[r].warmEmbedder)).toEqual(only('all', 'query'));
  });
  it('runs scripts and webhooks where commands or projectors run', () => {
    expect(each((r) => ROLES[r].scripts)).toEqual(only('all', 'command', 'projector'));
    expect(each((r) => ROLES[r].webhooks)).toEqual(only('all', 'command', 'projector'));
  });
  it('keeps exact caches only where reads are served beside the in-process projector', () => {
    expect(each((r) => ROLES[r].exactCaches)).toEqual(only('all'));
    for (const r of roles) if (ROLES[r].exactCaches) expect(ROLES[r].projectors && servesQueries(ROLES[r])).toBe(true);
  });
});
