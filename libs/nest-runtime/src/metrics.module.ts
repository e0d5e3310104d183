import { Injectable, Module, type OnApplicationShutdown } from '@nestjs/common';
import { PrometheusController, PrometheusModule } from '@willsoto/nestjs-prometheus';
import { collectProcessMetrics, tracingHandle } from '@rstar/telemetry';
import { PublicRoute } from './auth/require-scope.decorator';

// Prometheus scrapes without a token, as Kubernetes probes do (the guard lets public routes through).
PublicRoute()(PrometheusController);

/** Exports the spans still buffered when the service stops (after every worker drained). */
@Injectable()
export class TracingFlush implements OnApplicationShutdown {
  async onApplicationShutdown(): Promise<void> {
    await tracingHandle()?.shutdown();
  }
}

/**
 * `GET /metrics` in Prometheus text (@willsoto/nestjs-prometheus over prom-client's default registry,
 * which every rstar metric registers on), with Node's process metrics prefixed `rstar_`; and the flush of
 * the OpenTelemetry spans at shutdown.
 */
@Module({
  imports: [PrometheusModule.register({ path: '/metrics', defaultMetrics: { enabled: false } })],
  providers: [TracingFlush],
})
export class MetricsModule {
  constructor() {
    collectProcessMetrics();
  }
}
