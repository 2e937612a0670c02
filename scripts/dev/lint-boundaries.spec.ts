// The structural lint rules, run by `npm test` (docs/TESTING.md "Structural checks"): which project may
// import which (@nx/enforce-module-boundaries, the tags in each project.json) and that scripts use public
// entry points only (no-restricted-imports), both from eslint.config.mjs. The rest of the lint (style,
// the typescript-eslint set) is `npm run lint`; these two decide the shape of the repository, so a
// change that breaks them fails the suite, not only a lint run someone may skip.
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';

const ROOT = path.resolve(__dirname, '../..');
// A whole-tree lint takes ~30 s of CPU; on 2 shared cores beside the rest of the suite, far more.
jest.setTimeout(300_000);
const STRUCTURAL = ['@nx/enforce-module-boundaries', 'no-restricted-imports'];

interface Message {
  ruleId: string | null;
  severity: number;
  line: number;
  message: string;
}
interface Result {
  filePath: string;
  messages: Message[];
}

// ESLint loads eslint.config.mjs with import(), which jest's module sandbox refuses: the lint runs in a
// child node, through ESLint's API (the CLI cannot keep only some rules), and answers in JSON.
const CHILD = `
import { ESLint } from 'eslint';
const [rules, code, filePath] = JSON.parse(process.env.LINT_REQUEST);
// Without type information: these rules need none, the whole tree lints several times faster, and
// the probes below are virtual files the type-aware project service would not find.
const eslint = new ESLint({
  cwd: process.cwd(),
  ruleFilter: ({ ruleId }) => rules.includes(ruleId),
  overrideConfig: { files: ['**/*.ts'], languageOptions: { parserOptions: { projectService: false } } },
});
const results = code === null ? await eslint.lintFiles(['.']) : await eslint.lintText(code, { filePath });
process.stdout.write(JSON.stringify(results.map(({ filePath, messages }) => ({ filePath, messages }))));
`;

async function structuralLint(code: string | null = null, filePath: string | null = null): Promise<Result[]> {
  const { stdout } = await promisify(execFile)(process.execPath, ['--input-type=module', '-e', CHILD], {
    cwd: ROOT,
    env: { ...process.env, LINT_REQUEST: JSON.stringify([STRUCTURAL, code, filePath]) },
    maxBuffer: 64 * 1024 * 1024,
  });
  return JSON.parse(stdout) as Result[];
}

describe('structural lint', () => {
  it('the tree breaks no boundary and no entry-point rule', async () => {
    const results = await structuralLint();
    const errors = results.flatMap((r) =>
      r.messages
        .filter((m) => m.severity === 2)
        .map((m) => `${path.relative(ROOT, r.filePath)}:${m.line} ${m.ruleId ?? 'parse'}: ${m.message}`),
    );
    expect(errors).toEqual([]);
  });

  it('the boundary rule runs (it skips itself silently when Nx has no project graph)', async () => {
    // libs/messaging imports no lib of ours (eslint.config.mjs): a file there importing contracts breaks it.
    const [result] = await structuralLint(
      "import { QUEUES } from '@community/contracts';\nexport const q = QUEUES;\n",
      path.join(ROOT, 'libs/messaging/src/boundary-probe.ts'),
    );
    expect(result.messages.map((m) => m.ruleId)).toEqual(['@nx/enforce-module-boundaries']);
  });

  it('a script reaching into a lib is refused', async () => {
    const [result] = await structuralLint(
      "import { x } from '../../libs/config/src/common';\nexport const y = x;\n",
      path.join(ROOT, 'scripts/ops/entry-probe.ts'),
    );
    expect(result.messages.map((m) => m.ruleId)).toEqual(['no-restricted-imports']);
  });
});
