import js from '@eslint/js';
import nx from '@nx/eslint-plugin';
import tseslint from 'typescript-eslint';

// The dependency rules of the house (ARCHITECTURE §2): libs import only libs; services, the CLI and the
// dashboard (apps/dashboard, type:ui: type-only imports of the view shapes) import libs; nothing imports a service or the CLI; no import cycles (type-only imports included).
// The test helpers (libs/testing, type:test-support) are for spec files, test/ and benchmarks/ (type:bench) only. Projects carry
// these tags in their project.json; test/architecture/module-boundaries.int.spec.ts runs this rule in CI.
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
