// npm run infra:generate — writes every generated infrastructure file (./generate.ts).
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { generatedFiles } from './generate';

const ROOT = path.resolve(__dirname, '../../..');
for (const [file, content] of generatedFiles()) {
  mkdirSync(path.dirname(path.join(ROOT, file)), { recursive: true });
  writeFileSync(path.join(ROOT, file), content);
  console.log(file);
}
