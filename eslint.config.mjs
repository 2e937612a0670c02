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
          depConstraints: [
            { sourceTag: 'type:app', onlyDependOnLibsWithTags: ['type:lib'] },
            { sourceTag: 'type:lib', onlyDependOnLibsWithTags: ['type:lib'] },
            // libs/messaging is a generic RabbitMQ runtime: it imports no lib of ours (its tests
            // included), so the system's topology, contract and error types come in as options.
            { sourceTag: 'scope:messaging', onlyDependOnLibsWithTags: [] },
          ],
        },
      ],
      '@typescript-eslint/no-floating-promises': 'off',
    },
  },
  {
    // Scripts (benchmarks, dev tooling) build apps through their public entry, apps/<name>/src/index.ts,
    // never from their internals: an app may reshape src/ freely (docs/SERVICE-TEMPLATE.md).
    files: ['scripts/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        { patterns: [{ group: ['**/apps/*/src/**', '!**/apps/*/src/index'], message: "Import the app's public entry (apps/<name>/src), not its internals." }] },
      ],
    },
  },
];
