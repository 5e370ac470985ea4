import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/', 'dist-bench/', 'node_modules/', 'clients/*/dist/', 'bench/results/', 'coverage/'] },
  js.configs.recommended,
  ...tseslint.configs.strictTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/restrict-template-expressions': ['error', { allowNumber: true }],
      '@typescript-eslint/no-unnecessary-condition': 'off',
      '@typescript-eslint/no-confusing-void-expression': 'off',
    },
  },
  {
    // V8's unoptimized code allocates a function literal assigned to a property straight into the old
    // generation. Made per request, it keeps its request's objects alive until a full collection
    // (docs/performance.md, round fourteen): assign the function to a local first.
    files: ['src/**/*.ts'],
    rules: {
      'no-restricted-syntax': [
        'error',
        {
          selector:
            "AssignmentExpression[left.type='MemberExpression'] > :matches(ArrowFunctionExpression, FunctionExpression).right",
          message:
            'A function literal assigned to a property is allocated old by V8 and outlives its request: assign it to a local first, or use a class field.',
        },
      ],
    },
  },
  {
    // Async event handlers in JSX are fine: their errors are caught inside (dashboard/src/ui.tsx).
    files: ['dashboard/**/*.tsx'],
    rules: {
      '@typescript-eslint/no-misused-promises': ['error', { checksVoidReturn: { attributes: false } }],
    },
  },
  {
    files: ['**/*.js', 'bin/*'],
    ...tseslint.configs.disableTypeChecked,
  },
);
