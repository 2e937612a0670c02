import nx from '@nx/eslint-plugin';

export default [
  ...nx.configs['flat/base'],
  ...nx.configs['flat/typescript'],
  { ignores: ['**/dist', '**/node_modules', '**/generated', '.nx', 'tmp'] },
  {
    files: ['**/*.ts'],
    rules: {
      // apps never import apps; libs import only libs.
      '@nx/enforce-module-boundaries': [
        'error',
        {
          enforceBuildableLibDependency: false,
          allow: [],
          // Test-time only: messaging's integration tests (libs/messaging/test) use the testing lib,
          // whose broker helpers use messaging's own management-API lookup. No product code has the loop.
          ignoredCircularDependencies: [['testing', 'messaging']],
          depConstraints: [
            { sourceTag: 'type:app', onlyDependOnLibsWithTags: ['type:lib'] },
            { sourceTag: 'type:lib', onlyDependOnLibsWithTags: ['type:lib'] },
          ],
        },
      ],
      '@typescript-eslint/no-floating-promises': 'off',
    },
  },
  {
    // Scripts (benchmarks, dev and db tooling, end-to-end tests) drive the code through its public
    // entry points, as an operator or another service would: a lib as `@community/<lib>` (a lib's own
    // bench may say '../src', its index), an app through its index (`apps/<app>/src`, its public
    // builder), never another file inside a src/ folder. A deep import ties a script to internals that
    // a refactoring is free to move, and it goes unnoticed until it breaks.
    files: ['scripts/**/*.{ts,mjs,cjs,js}', 'libs/*/bench/**/*.ts', 'e2e/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              regex: '(^|/)libs/[^/]+/src(/|$)',
              message: 'Scripts use public entry points only: import a lib as @community/<name>, not a path into libs/*/src.',
            },
            {
              regex: '(^|/)apps/[^/]+/src/(?!index$).',
              message: "Scripts use public entry points only: an app's index (apps/<app>/src), not a file inside its src/.",
            },
            {
              regex: '^@community/[^/]+/.',
              message: 'Import @community/<name> itself: its index is the public entry point.',
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
