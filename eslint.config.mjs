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
];
