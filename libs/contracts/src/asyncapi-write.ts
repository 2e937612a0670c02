// `npm run contracts:asyncapi`: writes docs/asyncapi.yaml from libs/contracts (asyncapi.ts). Run it
// after changing EVENT_TYPES, the envelope or the topology; asyncapi.spec.ts fails until then.
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { ASYNCAPI_FILE, asyncApiYaml } from './asyncapi';

const target = path.resolve(__dirname, '../../..', ASYNCAPI_FILE);
writeFileSync(target, asyncApiYaml());
console.log(`wrote ${ASYNCAPI_FILE}`);
