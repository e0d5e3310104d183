import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';

/**
 * Where the built dashboard (apps/dashboard, `pnpm nx build dashboard`) is: `explicit` when given (a
 * service image sets RSTAR_UI_DIR), else `dist/apps/dashboard` under the repository root (the nearest
 * folder above this file holding `pnpm-workspace.yaml`, also from a build under dist/).
 */
export function dashboardDir(explicit?: string): string {
  if (explicit) return resolve(explicit);
  for (let d = __dirname; ; d = dirname(d)) {
    if (existsSync(join(d, 'pnpm-workspace.yaml'))) return join(d, 'dist', 'apps', 'dashboard');
    if (dirname(d) === d) return resolve('dist', 'apps', 'dashboard');
  }
}
