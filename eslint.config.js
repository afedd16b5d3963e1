// ESLint flat config: typescript-eslint's type-checked rules on every TypeScript file (src, test, bench, research,
// scripts), run with --max-warnings 0 by `npm run lint` (and so by `npm test`). Formatting is Prettier's job.
import js from '@eslint/js';
import { defineConfig } from 'eslint/config';
import globals from 'globals';
import tseslint from 'typescript-eslint';

export default defineConfig(
  {
    ignores: [
      'node_modules/',
      'data/',
      'dist/',
      'models/',
      'coverage/',
      'scratch/',
      'bench/results/',
      'research/results/',
    ],
  },
  js.configs.recommended,
  {
    files: ['**/*.js', '**/*.mjs'],
    languageOptions: { globals: globals.node },
  },
  {
    // The web pages' module runs in the browser (src/gateway/routes/web.routes.ts serves it).
    files: ['web/**/*.js'],
    languageOptions: { globals: globals.browser, sourceType: 'module' },
  },
  {
    // Prettier wraps code at 120 columns but cannot break a string, a template literal or a comment: those are
    // wrapped by hand. A URL or a regular expression on a line of its own may run longer.
    rules: { 'max-len': ['error', { code: 120, ignoreUrls: true, ignoreRegExpLiterals: true }] },
  },
  {
    files: ['**/*.ts'],
    extends: [tseslint.configs.recommendedTypeChecked],
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    linterOptions: { reportUnusedDisableDirectives: 'error' },
    rules: {
      '@typescript-eslint/no-unused-vars': [
        'error',
        // `_`-prefixed names are deliberately unused (a required parameter, a rest sibling that drops a key).
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none', ignoreRestSiblings: true },
      ],
      '@typescript-eslint/no-floating-promises': [
        'error',
        // node:test runs and awaits top-level test()/describe() itself; their returned promise is not ours to await.
        {
          allowForKnownSafeCalls: [
            { from: 'package', package: 'node:test', name: ['test', 'describe', 'it', 'suite'] },
          ],
        },
      ],
      // Ports are Promise-returning interfaces; an implementation (in-memory store, test fake) may not need to await.
      '@typescript-eslint/require-await': 'off',
      // Arrays in error messages are meant to print joined by commas.
      '@typescript-eslint/restrict-template-expressions': [
        'error',
        {
          allowAny: true,
          allowBoolean: true,
          allowNullish: true,
          allowNumber: true,
          allowRegExp: true,
          allowArray: true,
        },
      ],
      // Rethrowing or rejecting with a caught `unknown` or an abort signal's reason passes it on unchanged.
      '@typescript-eslint/prefer-promise-reject-errors': [
        'error',
        { allowThrowingAny: true, allowThrowingUnknown: true },
      ],
    },
  },
  {
    // The CLI, tests and benchmarks read JSON bodies as `any` (tests check them with assertions): the no-unsafe-*
    // family would flag every field. (The store is not exempt: its queries are typed by `Kysely<DB>`.)
    files: ['src/cli/**/*.ts', 'test/**/*.ts', 'bench/**/*.ts', 'research/**/*.ts'],
    rules: {
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
    },
  },
  {
    // Test fixtures hand out closures (start, stop, cleanup) typed as interface methods; destructuring them is safe.
    files: ['test/**/*.ts'],
    rules: { '@typescript-eslint/unbound-method': 'off' },
  },
);
