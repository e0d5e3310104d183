import { Module } from '@nestjs/common';
import { PrometheusModule } from '@willsoto/nestjs-prometheus';
import { collectProcessMetrics } from '@rstar/telemetry';

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
