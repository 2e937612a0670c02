// `npm run infra:dashboards`: writes infra/grafana/dashboards/*.json from the TypeScript sources.
// infra/grafana/src/dashboards.spec.ts fails when the committed files differ from this output.
import { mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { DASHBOARDS_DIR, render } from './index';

const files = render();
mkdirSync(DASHBOARDS_DIR, { recursive: true });
for (const stale of readdirSync(DASHBOARDS_DIR).filter((f) => f.endsWith('.json') && !(f in files))) {
  rmSync(path.join(DASHBOARDS_DIR, stale));
  console.log(`removed ${path.relative(process.cwd(), path.join(DASHBOARDS_DIR, stale))}`);
}
for (const [file, text] of Object.entries(files)) {
  writeFileSync(path.join(DASHBOARDS_DIR, file), text);
  console.log(`wrote ${path.relative(process.cwd(), path.join(DASHBOARDS_DIR, file))}`);
}
