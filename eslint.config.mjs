import js from '@eslint/js';
import nx from '@nx/eslint-plugin';
import tseslint from 'typescript-eslint';

// The dependency rules of the house (ARCHITECTURE §2): libs import only libs; services, the CLI and the
// dashboard (apps/dashboard, type:ui: type-only imports of the view shapes) import libs; nothing imports a service or the CLI; no import cycles (type-only imports included).
// The test helpers (libs/testing, type:test-support) are for spec files, test/ and benchmarks/ (type:bench) only. Projects carry
// these tags in their project.json; test/architecture/module-boundaries.int.spec.ts runs this rule in CI.
// Scopes (one `scope:*` tag per project, beside its `type:*` tag): what a project may use, lowest layer
// first. A lib may use its own scope and the ones listed; nothing uses a scope above it (the sandbox never
// imports training, messaging never imports grading). test/architecture/module-boundaries.int.spec.ts
// checks the import graph against this table too, and that every project carries exactly one scope.
const LIB_SCOPES = ['scope:shared', 'scope:sandbox', 'scope:messaging', 'scope:grading', 'scope:rollout', 'scope:views', 'scope:training'];
export const SCOPE_MAY_USE = {
  'scope:shared': ['scope:shared'],
  'scope:sandbox': ['scope:shared', 'scope:sandbox'],
  'scope:messaging': ['scope:shared', 'scope:messaging'],
  'scope:grading': ['scope:shared', 'scope:sandbox', 'scope:messaging', 'scope:grading'],
  'scope:rollout': ['scope:shared', 'scope:sandbox', 'scope:messaging', 'scope:rollout'],
  'scope:views': ['scope:shared', 'scope:sandbox', 'scope:messaging', 'scope:grading', 'scope:rollout', 'scope:views'],
  'scope:training': LIB_SCOPES,
  'scope:service': [...LIB_SCOPES, 'scope:service'],
  'scope:cli': LIB_SCOPES,
  // The test helpers (libs/testing) build whole runs, so they may use every lib; only specs, benches and e2e use them.
  'scope:testing': LIB_SCOPES,
  'scope:bench': [...LIB_SCOPES, 'scope:testing'],
  'scope:ui': ['scope:views'],
  'scope:e2e': [...LIB_SCOPES, 'scope:service', 'scope:testing'],
};

const boundaries = (extraForTests) => [
  'error',
  {
    enforceBuildableLibDependency: false,
    allowCircularSelfDependency: false,
    checkDynamicDependenciesExceptions: [],
    depConstraints: [
      { sourceTag: 'type:lib', onlyDependOnLibsWithTags: ['type:lib', ...extraForTests] },
      { sourceTag: 'type:app', onlyDependOnLibsWithTags: ['type:lib', ...extraForTests] },
      { sourceTag: 'type:ui', onlyDependOnLibsWithTags: ['type:lib'] },
      { sourceTag: 'type:cli', onlyDependOnLibsWithTags: ['type:lib', ...extraForTests] },
      { sourceTag: 'type:bench', onlyDependOnLibsWithTags: ['type:lib', 'type:test-support'] },
      { sourceTag: 'type:test-support', onlyDependOnLibsWithTags: ['type:lib'] },
      { sourceTag: 'type:e2e', onlyDependOnLibsWithTags: ['type:lib', 'type:test-support'] },
      ...Object.entries(SCOPE_MAY_USE).map(([sourceTag, may]) => ({
        sourceTag,
        onlyDependOnLibsWithTags: extraForTests.length > 0 ? [...new Set([...may, 'scope:testing'])] : may,
      })),
    ],
  },
];

export default tseslint.config(
  { ignores: ['**/node_modules/**', '**/dist/**', '.venv/**', '**/.venv/**', '.venv-*/**', '**/.venv-*/**', '.tools/**', 'workers/**/.venv/**', '.nx/**', 'runs/**', 'reports/**', '.rstar/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    plugins: { '@nx': nx },
    rules: {
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@nx/enforce-module-boundaries': boundaries([]),
    },
  },
  // Plain Node scripts (build, infra): Node's globals.
  { files: ['**/*.mjs', '**/*.cjs'], languageOptions: { globals: { process: 'readonly', console: 'readonly', __dirname: 'readonly', require: 'readonly', module: 'readonly' } } },
  // Spec files may also use the shared test helpers (@rstar/testing).
  { files: ['**/*.spec.ts'], rules: { '@nx/enforce-module-boundaries': boundaries(['type:test-support']) } },
);
