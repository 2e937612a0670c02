import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { generatedFiles } from './generate';

const ROOT = path.resolve(__dirname, '../../..');

describe('generated infrastructure files (npm run infra:generate)', () => {
  it.each([...generatedFiles()].map(([file, content]) => [file, content]))(
    '%s is committed as generated',
    (file, content) => {
      const full = path.join(ROOT, file);
      expect(existsSync(full) ? readFileSync(full, 'utf8') : `(missing: run npm run infra:generate)`).toBe(content);
    },
  );
});
