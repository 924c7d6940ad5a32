import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import globals from 'globals';

const EXPRESS = { regex: '^(express|@bull-board/express)(/.*)?$', message: 'wallet/, store/, registry/, duties/, engine/ and console/ never import Express.' };

/** An import of a src/ folder other than these (and of anything outside src/) from a file one folder down. */
const onlyFloors = (folder, below) => ({
  regex: below.length === 0 ? '^\\.\\./' : `^\\.\\./(?!(?:${below.join('|')})(?:/|$))`,
  message: below.length === 0 ? `src/${folder}/ is the ground floor: it imports nothing else of the project.` : `src/${folder}/ imports only the floors below it: ${below.join(', ')}.`,
});

// Each floor and the floors it may import, lowest first.
const FLOORS = [
  ['lib', []],
  ['config', ['lib']],
  ['wallet', ['lib', 'config']],
  ['store', ['lib', 'config', 'wallet']],
  ['registry', ['lib', 'config', 'wallet', 'store']],
  ['duties', ['lib', 'config', 'wallet', 'store', 'registry', 'observability']],
  ['ledger', ['lib', 'config', 'store', 'registry', 'observability']],
  ['engine', ['lib', 'config', 'wallet', 'store', 'registry', 'observability', 'duties', 'ledger']],
  ['console', ['lib', 'config', 'wallet', 'store', 'registry', 'observability', 'duties', 'engine', 'ledger']],
  ['http', ['lib', 'config', 'wallet', 'store', 'registry', 'observability', 'duties', 'engine', 'console', 'ledger']],
];
const NO_EXPRESS = new Set(['wallet', 'store', 'registry', 'duties', 'ledger', 'engine', 'console']);

// Within http/: the console's routes and pages sit below admin.ts, which mounts them.
const BELOW_ADMIN = ['src/http/console.ts', 'src/http/console-pages.ts', 'src/http/admin-view.ts'];
const NOT_ADMIN = { regex: '^\\./admin$', message: 'admin.ts mounts the console: the console never imports it back (what both need lives in admin-view.ts).' };

function layers() {
  const entry = (files, patterns) => ({ files, rules: { 'no-restricted-imports': ['error', { patterns }] } });
  return [
    ...FLOORS.map(([folder, below]) => entry([`src/${folder}/**`], [onlyFloors(folder, below), ...(NO_EXPRESS.has(folder) ? [EXPRESS] : [])])),
    entry(BELOW_ADMIN, [onlyFloors('http', FLOORS.at(-1)[1]), NOT_ADMIN]),
    entry(['src/observability/**'], [{ regex: '^\\.\\./(engine|console|http|sim|soak|main)(/|$)', message: 'observability/ never imports the use cases, the console, http/ or the process entries.' }]),
    entry(['workers/**'], [{ regex: '(^|/)src/http(/|$)', message: 'workers/ never imports src/http/.' }]),
    entry(['src/sim/**'], [{ regex: '^(\\.\\./)+(engine|store|duties)(/|$)', message: "sim/ is the other side of the wire: it never imports the gateway's engine/, store/ or duties/." }]),
    // The wallet check judges a wallet with the gateway's own client, signer, schemas and code table, and nothing above them.
    entry(['src/check/**'], [onlyFloors('check', ['lib', 'config', 'wallet']), EXPRESS]),
  ];
}

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
  // The layering the README draws (How it is built): data flows one way, each floor importing only
  // the floors below it (src/lib is the ground floor). One entry per folder, because a file's
  // no-restricted-imports is the last matching entry's, not a merge.
  ...layers(),
  { files: ['**/*.js', '**/*.cjs'], rules: { '@typescript-eslint/no-require-imports': 'off' } },
);
