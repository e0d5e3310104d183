import { Controller, Get, Req, Res } from '@nestjs/common';
import { RequireScope } from '@rstar/nest-runtime';
import { ConfigService } from '@nestjs/config';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { dashboardDir } from '@rstar/run-views';
import type { ControlPlaneEnv } from '../control-plane.config';

/** The parts of express's request and response the static route uses. */
interface Req { path: string }
interface Res {
  redirect(status: number, url: string): void;
  status(code: number): Res;
  type(t: string): Res;
  send(body: string): void;
  sendFile(path: string, opts: { root: string; dotfiles: 'deny'; maxAge: number }, cb: (err?: Error & { status?: number }) => void): void;
}

/**
 * The dashboard's static files under `/ui` (apps/dashboard, built by `pnpm nx build dashboard` into
 * dist/apps/dashboard, or RSTAR_UI_DIR). Pages route with the URL hash, so only `index.html` and its
 * assets are served; express's `sendFile` with a `root` refuses paths outside it. Hashed assets are
 * cached for a year, `index.html` not at all. 503 with the build command when the app is not built.
 */
@Controller('ui')
@RequireScope('read')
export class UiController {
  private readonly dir: string;

  constructor(cfg: ConfigService<ControlPlaneEnv, true>) {
    this.dir = dashboardDir(cfg.get('RSTAR_UI_DIR', { infer: true }) || undefined);
  }

  @Get()
  index(@Req() req: Req, @Res() res: Res): void {
    if (!req.path.endsWith('/')) return res.redirect(301, '/ui/');
    this.send('index.html', res);
  }

  @Get('*path')
  file(@Req() req: Req, @Res() res: Res): void {
    const rel = decodeURIComponent(req.path.replace(/^\/ui\/?/, '')) || 'index.html';
    this.send(rel, res);
  }

  private send(rel: string, res: Res): void {
    if (!existsSync(join(this.dir, 'index.html'))) {
      res.status(503).type('text/plain').send(`the dashboard is not built in ${this.dir}: run \`pnpm nx build dashboard\` (or set RSTAR_UI_DIR)\n`);
      return;
    }
    const maxAge = rel.startsWith('assets/') ? 365 * 24 * 3600 * 1000 : 0;
    res.sendFile(rel, { root: this.dir, dotfiles: 'deny', maxAge }, (err) => {
      if (err) res.status(err.status ?? 404).type('text/plain').send(`not found: /ui/${rel}\n`);
    });
  }
}
