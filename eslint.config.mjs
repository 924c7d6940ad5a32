import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import globals from 'globals';

export default tseslint.config(
  { ignores: ['dist/', 'node_modules/', 'coverage/', 'bench/results/', 'test/artifacts/', '.data/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { globals: { ...globals.node } },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'no-restricted-properties': ['error', { object: 'process', property: 'env', message: 'Read configuration through src/config only.' }],
    },
  },
  {
    // Process entries and tools; src/lib/child.ts hands PATH and the like on to child processes.
    files: ['src/config/**', 'test/**', 'bench/**', 'jest.config.js', 'src/main/**', 'src/lib/child.ts'],
    rules: { 'no-restricted-properties': 'off' },
  },
  // The layering the README draws (How it is built): data flows one way.
  {
    files: ['src/wallet/**', 'src/store/**', 'src/duties/**', 'src/engine/**', 'src/console/**'],
    rules: {
      'no-restricted-imports': ['error', {
        patterns: [
          { regex: '^(express|@bull-board/express)(/.*)?$', message: 'wallet/, store/, duties/ and engine/ never import Express.' },
          { regex: '^\\.\\.?/(.*/)?http(/|$)', message: 'wallet/, store/, duties/ and engine/ never import src/http/.' },
        ],
      }],
    },
  },
  {
    files: ['workers/**'],
    rules: {
      'no-restricted-imports': ['error', { patterns: [{ regex: '(^|/)src/http(/|$)', message: 'workers/ never imports src/http/.' }] }],
    },
  },
  {
    files: ['src/sim/**'],
    rules: {
      'no-restricted-imports': ['error', {
        patterns: [{ regex: '^(\\.\\./)+(engine|store|duties)(/|$)', message: "sim/ is the other side of the wire: it never imports the gateway's engine/, store/ or duties/." }],
      }],
    },
  },
  { files: ['**/*.js', '**/*.cjs'], rules: { '@typescript-eslint/no-require-imports': 'off' } },
);
