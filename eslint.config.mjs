import { createProjectGraphAsync } from '@nx/devkit';
import nx from '@nx/eslint-plugin';

// @nx/enforce-module-boundaries reads the project graph that Nx caches in .nx/workspace-data, and
// where there is none (a fresh clone, CI, .nx removed) it prints "No cached ProjectGraph is available.
// The rule will be skipped." and passes without checking anything. Computing the graph here (under a
// second, incremental, and it refreshes the cache) makes every eslint run check the boundaries against
// the tree as it is: `npm run lint`, `npx eslint <files>`, an editor, scripts/dev/lint-boundaries.spec.ts.
await createProjectGraphAsync({ exitOnError: true });

export default [
  ...nx.configs['flat/base'],
  ...nx.configs['flat/typescript'],
  { ignores: ['**/dist', '**/node_modules', '**/generated', '.nx', 'tmp'] },
  // Type-aware: rules such as no-floating-promises need the types (typescript-eslint's project
  // service finds tsconfig.json for every file it lints).
  {
    files: ['**/*.ts'],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
  },
  {
    files: ['**/*.ts'],
    rules: {
      // apps never import apps; libs import only libs.
      '@nx/enforce-module-boundaries': [
        'error',
        {
          enforceBuildableLibDependency: false,
          // The one exception: the reconciler schedules the repair, retention and check jobs the
          // owning apps export, through each app's index only (its public entry): the SQL of a
          // table lives with the table's owner (docs/DATABASE.md "Who owns each table"), and a
          // second copy of "what a feed holds" or "what a counter counts" would drift from the first.
          allow: ['@community/feed-service', '@community/notification-service', '@community/email-service'],
          depConstraints: [
            { sourceTag: 'type:app', onlyDependOnLibsWithTags: ['type:lib'] },
            { sourceTag: 'type:lib', onlyDependOnLibsWithTags: ['type:lib'] },
            // libs/messaging is a generic RabbitMQ runtime: it imports no lib of ours (its tests
            // included), so the system's topology, contract and error types come in as options.
            { sourceTag: 'scope:messaging', onlyDependOnLibsWithTags: [] },
          ],
        },
      ],
      // A promise nobody awaits or catches fails silently (an unhandled rejection at best).
      '@typescript-eslint/no-floating-promises': 'error',
    },
  },
  {
    // Scripts (benchmarks, dev and db tooling, end-to-end tests) drive the code through its public
    // entry points, as an operator or another service would: a lib as `@community/<lib>` or one of the
    // entries tsconfig.base.json declares (nothing else resolves), a lib's own bench as '../src' (its
    // index), an app through its index (`apps/<app>/src`, its public builder, docs/SERVICE-TEMPLATE.md);
    // never another file inside a src/ folder. A deep import ties a script to internals that a
    // refactoring is free to move, and it goes unnoticed until it breaks.
    files: ['scripts/**/*.{ts,mjs,cjs,js}', 'libs/*/bench/**/*.ts', 'e2e/**/*.ts', 'infra/tools/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              regex: '(^|/)libs/[^/]+/src(/|$)',
              message:
                'Scripts use public entry points only: import a lib as @community/<name>, not a path into libs/*/src.',
            },
            {
              regex: '(^|/)apps/[^/]+/src/(?!index$).',
              message:
                "Scripts use public entry points only: an app's index (apps/<app>/src), not a file inside its src/.",
            },
            {
              regex: '^\\.\\./src/.',
              message: "A lib's bench imports the lib's index ('../src'), not a file inside it.",
            },
          ],
        },
      ],
    },
  },
];
