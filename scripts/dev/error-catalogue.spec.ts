// One error catalogue per app, tied to its documentation (docs/ERRORS.md), as fastify's
// test/errors.test.js ties its errors to docs/Reference/Errors.md: every code of a catalogue is
// documented with its status, every documented code exists, and a code named anywhere in the docs is
// a real one. An app has exactly one catalogue, `src/http/errors.ts` (docs/SERVICE-TEMPLATE.md
// "Errors"), so its codes are unique by construction (the keys of one object); a second one is any
// other file under its src/ that calls `defineErrors` or builds a `CodedHttpError` itself.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { ERRORS as DEMO_ERRORS } from '../../apps/demo-community-api/src';
import { ERRORS as EMAIL_ERRORS } from '../../apps/email-service/src';
import { ERRORS as FEED_ERRORS } from '../../apps/feed-service/src';
import { ERRORS as NOTIFICATION_ERRORS } from '../../apps/notification-service/src';
import { ERRORS as PUSH_ERRORS } from '../../apps/push-service/src';
import { ERRORS as RECONCILER_ERRORS } from '../../apps/reconciler/src';

const ROOT = path.resolve(__dirname, '../..');
const DOC = 'docs/ERRORS.md';
const CATALOGUE = 'src/http/errors.ts';

/** Each app's catalogue and the prefix of its codes; the demo API's codes are bare (its clients know them so). */
const APPS: Record<string, { prefix: string; errors: object }> = {
  'notification-service': { prefix: 'NS_', errors: NOTIFICATION_ERRORS },
  'email-service': { prefix: 'ES_', errors: EMAIL_ERRORS },
  'feed-service': { prefix: 'FS_', errors: FEED_ERRORS },
  'push-service': { prefix: 'PS_', errors: PUSH_ERRORS },
  reconciler: { prefix: 'RC_', errors: RECONCILER_ERRORS },
  'demo-community-api': { prefix: '', errors: DEMO_ERRORS },
};

type Factory = (...args: unknown[]) => { code: string; statusCode: number };

/** code → status, made by calling every factory (placeholder arguments: only the message uses them). */
function catalogueOf(errors: object): Map<string, number> {
  const codes = new Map<string, number>();
  for (const make of Object.values(errors) as Factory[]) {
    const e = make('x', 'y', 'z');
    codes.set(e.code, e.statusCode);
  }
  return codes;
}

/** The doc's tables, by section heading: code (or key) → documented status. */
function documented(): Map<string, Map<string, number>> {
  const sections = new Map<string, Map<string, number>>();
  let rows: Map<string, number> | undefined;
  for (const line of readFileSync(path.join(ROOT, DOC), 'utf8').split('\n')) {
    const heading = /^## (.+)$/.exec(line);
    if (heading) sections.set(heading[1].trim(), (rows = new Map()));
    const row = /^\| `([A-Za-z0-9_]+)` \| (\d{3}) \|/.exec(line);
    if (row && rows) {
      if (rows.has(row[1])) throw new Error(`${DOC}: ${row[1]} is listed twice under one heading`);
      rows.set(row[1], Number(row[2]));
    }
  }
  return sections;
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const full = path.join(dir, name);
    if (statSync(full).isDirectory()) return sourceFiles(full);
    return /\.ts$/.test(name) && !/\.(spec|test)\.ts$/.test(name) ? [full] : [];
  });
}

/** The one file under libs/ that matches `pattern` (the shared error handler, the guards). */
function libFile(pattern: RegExp): string {
  const files = sourceFiles(path.join(ROOT, 'libs')).filter((file) => pattern.test(readFileSync(file, 'utf8')));
  if (files.length !== 1) throw new Error(`expected one file under libs/ to match ${pattern}, found ${files.length}`);
  return files[0];
}

/**
 * The codes the shared error handler answers with in every service (DEPENDENCY_UNAVAILABLE,
 * INTERNAL_ERROR): the code constants exported beside `CodedHttpError`, read from the source so this
 * spec follows the file to whichever lib holds it.
 */
const SHARED_CODES = [
  ...readFileSync(libFile(/export class CodedHttpError\b/), 'utf8').matchAll(/^export const [A-Z_]+ = '([A-Z_]+)';/gm),
]
  .map((m) => m[1])
  .sort();

const DOCUMENTED = documented();
const TOKEN_KEYS = [...(DOCUMENTED.get('Token errors') ?? new Map<string, number>()).keys()];

/** The code without its comments, so a comment that names `defineErrors(…)` is not a catalogue. */
const withoutComments = (text: string) => text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/(^|[^:'"`])\/\/.*$/gm, '$1');

const rel = (file: string) => path.relative(ROOT, file).split(path.sep).join('/');

it('every app has an entry here and a section in docs/ERRORS.md; prefixes are distinct', () => {
  const apps = readdirSync(path.join(ROOT, 'apps')).filter((name) => existsSync(path.join(ROOT, 'apps', name, 'src')));
  expect(apps.sort()).toEqual(Object.keys(APPS).sort());
  for (const app of apps) expect(DOCUMENTED.has(app) ? app : `no '## ${app}' in ${DOC}`).toBe(app);
  const prefixes = Object.values(APPS).map((a) => a.prefix);
  expect(new Set(prefixes).size).toBe(prefixes.length);
});

describe.each(Object.entries(APPS))('%s', (app, { prefix, errors }) => {
  const codes = catalogueOf(errors);

  it(`declares its errors in one catalogue, ${CATALOGUE}`, () => {
    const catalogues = sourceFiles(path.join(ROOT, 'apps', app, 'src'))
      .filter((file) =>
        /\bdefineErrors\s*[<(]|\bnew\s+CodedHttpError\s*\(/.test(withoutComments(readFileSync(file, 'utf8'))),
      )
      .map(rel);
    expect(catalogues).toEqual([`apps/${app}/${CATALOGUE}`]);
  });

  it(`codes are ${prefix ? `${prefix}-prefixed` : 'bare'}, one per key, and none is a token error's or a shared code`, () => {
    expect(codes.size).toBe(Object.keys(errors).length);
    for (const code of codes.keys()) {
      expect(code).toMatch(new RegExp(`^${prefix}[A-Z][A-Z0-9_]*$`));
      expect(TOKEN_KEYS).not.toContain(code.slice(prefix.length));
      expect(SHARED_CODES).not.toContain(code);
    }
  });

  it(`every code is in ${DOC} with its status, and every code there exists`, () => {
    const doc = DOCUMENTED.get(app) ?? new Map<string, number>();
    expect([...codes.keys()].filter((code) => !doc.has(code))).toEqual([]); // undocumented
    expect([...doc.keys()].filter((code) => !codes.has(code))).toEqual([]); // stale
    expect(Object.fromEntries(doc)).toEqual(Object.fromEntries(codes));
  });
});

it('no two apps answer the same code', () => {
  const all = Object.values(APPS).flatMap(({ errors }) => [...catalogueOf(errors).keys()]);
  expect(all.filter((code, i) => all.indexOf(code) !== i)).toEqual([]);
});

it(`the shared codes in ${DOC} are the ones every service's error handler answers with`, () => {
  expect(SHARED_CODES.length).toBeGreaterThan(0);
  expect([...(DOCUMENTED.get('Every service')?.keys() ?? [])].sort()).toEqual(SHARED_CODES);
});

it(`every token error key in ${DOC} is one the shared guards (or an app's forbiddenCode) answer with`, () => {
  const sources = [
    // The shared auth code: the guards' folder (the guards, the verifiers' TokenRefused codes).
    ...sourceFiles(path.dirname(libFile(/export function authGuards\b/))),
    ...Object.keys(APPS).flatMap((app) => sourceFiles(path.join(ROOT, 'apps', app, 'src'))),
  ]
    .map((file) => readFileSync(file, 'utf8'))
    .join('\n');
  expect(TOKEN_KEYS.length).toBeGreaterThan(0);
  // A key is a quoted code (`'ADMIN_KEY_UNKNOWN'`) or a key of the guards' own catalogue (`ADMIN_REQUIRED:`).
  expect(TOKEN_KEYS.filter((key) => !new RegExp(`'${key}'|\\b${key}:`).test(sources))).toEqual([]);
});

it('every prefixed code the docs and READMEs name is a catalogue code or a token error of that app', () => {
  const prefixed = Object.entries(APPS).filter(([, a]) => a.prefix);
  const known = new Set(
    prefixed.flatMap(([, { prefix, errors }]) => [
      ...catalogueOf(errors).keys(),
      ...TOKEN_KEYS.map((key) => prefix + key),
    ]),
  );
  const mention = new RegExp(`\\b(?:${prefixed.map(([, a]) => a.prefix).join('|')})[A-Z][A-Z0-9_]*\\b`, 'g');
  const docs = [
    ...readdirSync(path.join(ROOT, 'docs'))
      .filter((name) => name.endsWith('.md'))
      .map((name) => `docs/${name}`),
    'README.md',
    ...['apps', 'libs'].flatMap((dir) =>
      readdirSync(path.join(ROOT, dir))
        .map((name) => `${dir}/${name}/README.md`)
        .filter((file) => existsSync(path.join(ROOT, file))),
    ),
  ];
  const stale = docs.flatMap((file) =>
    readFileSync(path.join(ROOT, file), 'utf8')
      .split('\n')
      .flatMap((line, i) =>
        (line.match(mention) ?? [])
          // `RC_DLQ_…` names a family of codes, not one.
          .filter((code) => !code.endsWith('_') && !known.has(code))
          .map((code) => `${file}:${i + 1} ${code}`),
      ),
  );
  expect(stale).toEqual([]);
});
