import nx from '@nx/eslint-plugin';

export default [
  ...nx.configs['flat/base'],
  ...nx.configs['flat/typescript'],
  { ignores: ['**/dist', '**/node_modules', '.nx', 'coverage'] },
  {
    files: ['**/*.ts'],
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@nx/enforce-module-boundaries': [
        'error',
        {
          enforceBuildableLibDependency: false,
          allow: [],
          depConstraints: [
            // Apps never import apps, nor the test helpers.
            { sourceTag: 'type:app', onlyDependOnLibsWithTags: ['type:util', 'type:contracts'] },
            { sourceTag: 'type:util', onlyDependOnLibsWithTags: ['type:util', 'type:contracts'] },
            { sourceTag: 'type:contracts', onlyDependOnLibsWithTags: [] },
            // The SDK is published on its own: it imports no workspace library.
            { sourceTag: 'type:sdk', onlyDependOnLibsWithTags: [] },
            // Tools such as the simulator are clients of the API: the SDK is all they may use.
            { sourceTag: 'type:tool', onlyDependOnLibsWithTags: ['type:sdk'] },
            { sourceTag: 'type:testing', onlyDependOnLibsWithTags: ['type:util', 'type:contracts'] },
            // OMS and DMS never import each other; only shared and backend libraries.
            { sourceTag: 'scope:oms', onlyDependOnLibsWithTags: ['scope:oms', 'scope:shared', 'scope:backend'] },
            { sourceTag: 'scope:dms', onlyDependOnLibsWithTags: ['scope:dms', 'scope:shared', 'scope:backend'] },
            { sourceTag: 'scope:gateway', onlyDependOnLibsWithTags: ['scope:gateway', 'scope:shared', 'scope:backend'] },
            { sourceTag: 'scope:device-gateway', onlyDependOnLibsWithTags: ['scope:device-gateway', 'scope:shared', 'scope:backend'] },
          ],
        },
      ],
    },
  },
  {
    // Specs and the integration suite compose the apps; they are the only place that may.
    files: ['**/*.spec.ts', 'test/**/*.ts', 'vitest.config.ts'],
    rules: {
      '@nx/enforce-module-boundaries': 'off',
      // Tests assert on values they have just created; `!` there states a fact, not a hope.
      '@typescript-eslint/no-non-null-assertion': 'off',
    },
  },
];
