import { Module } from '@nestjs/common';
import { PrometheusController, PrometheusModule } from '@willsoto/nestjs-prometheus';
import { collectProcessMetrics } from '@rstar/telemetry';
import { PublicRoute } from './auth/require-scope.decorator';

// Prometheus scrapes without a token, as Kubernetes probes do (the guard lets public routes through).
PublicRoute()(PrometheusController);

/**
 * `GET /metrics` in Prometheus text (@willsoto/nestjs-prometheus over prom-client's default registry,
 * which every rstar metric registers on), with Node's process metrics prefixed `rstar_`.
 */
@Module({
  imports: [PrometheusModule.register({ path: '/metrics', defaultMetrics: { enabled: false } })],
})
export class MetricsModule {
  constructor() {
    collectProcessMetrics();
  }
}
