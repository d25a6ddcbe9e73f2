// `npm run router`: writes the shipped router configuration from the route catalogue
// (deploy/src/http/router-config.ts).
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROUTER_CONFIG_PATH, routerConfig } from '../src/http/router-config';

const target = join(import.meta.dirname, '..', '..', ROUTER_CONFIG_PATH);
writeFileSync(target, routerConfig());
console.log(`wrote ${ROUTER_CONFIG_PATH}`);
