import { Controller, Get, Inject } from '@nestjs/common';
import { HealthCheck, HealthCheckService, HealthIndicatorService, type HealthIndicatorResult } from '@nestjs/terminus';
import { PublicRoute } from './auth/require-scope.decorator';
import { ReadinessRegistry } from './readiness.registry';
import { SERVICE_NAME } from './service-identity';

/**
 * Kubernetes probes. `GET /health/live`: the process answers (200, with the service's name, so a port
 * clash can say who holds the port). `GET /health/ready`: 200 when every registered dependency and worker
 * is ready, else 503 with the one that is not and why (Terminus' response shape).
 */
@Controller('health')
@PublicRoute()
export class HealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly indicators: HealthIndicatorService,
    private readonly registry: ReadinessRegistry,
    @Inject(SERVICE_NAME) private readonly service: string,
  ) {}

  @Get('live')
  live() {
    return { status: 'ok', service: this.service, pid: process.pid };
  }

  @Get('ready')
  @HealthCheck()
  ready() {
    return this.health.check(
      this.registry.all().map((c) => async (): Promise<HealthIndicatorResult> => {
        const session = this.indicators.check(c.name);
        try {
          const r = await c.probe();
          return r.ready ? session.up(r.details ?? {}) : session.down(r.details ?? {});
        } catch (e) {
          return session.down({ message: (e as Error).message });
        }
      }),
    );
  }
}
