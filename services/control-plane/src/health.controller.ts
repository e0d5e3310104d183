import { Controller, Get, Header, Inject, ServiceUnavailableException } from '@nestjs/common';
import type { Runtime } from '@rstar/runtime';
import { metricsRegistry } from '@rstar/telemetry';
import { RUNTIME } from './tokens';

/** `GET /health` (archive reachable, archiver lag) and `GET /metrics` (Prometheus text). */
@Controller()
export class HealthController {
  constructor(@Inject(RUNTIME) private readonly rt: Runtime) {}

  @Get('health')
  async health() {
    try {
      const events = await this.rt.store.count();
      const lag = this.rt.archiver ? await this.rt.archiver.lag() : null;
      return { status: 'ok', mode: this.rt.mode, events, archiverLag: lag };
    } catch (e) {
      throw new ServiceUnavailableException(`archive unreachable: ${(e as Error).message}`);
    }
  }

  @Get('metrics')
  @Header('Content-Type', 'text/plain; version=0.0.4')
  async metrics(): Promise<string> {
    if (this.rt.archiver) await this.rt.archiver.lag().catch(() => undefined); // refreshes the lag gauge
    return metricsRegistry.metrics();
  }
}
