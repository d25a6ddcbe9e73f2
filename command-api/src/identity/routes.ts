import type { RouteSpec } from '@svc/contracts';
import { type CommandDeps, type NamespaceUsage } from '@svc/domain';
import { entityCommandRoutes } from './entities';
import { namespaceCommandRoutes } from './namespaces';
import { userCommandRoutes } from './users';

export { registeredNamespaces } from './namespaces';

/** Identity writes: namespaces (per tenant), users and entities (per tenant and context). */
export const identityCommandRoutes = (deps: CommandDeps, usage: NamespaceUsage): RouteSpec[] => [
  ...namespaceCommandRoutes(deps, usage),
  ...userCommandRoutes(deps),
  ...entityCommandRoutes(deps),
];
