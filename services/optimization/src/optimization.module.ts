import { Module, type DynamicModule } from '@nestjs/common';
import { BusModule, EventStoreModule, HealthModule, MetricsModule, ServiceConfigModule } from '@rstar/nest-runtime';
import { optimizationEnv } from './optimization.config';
import { RunStartWorker } from './run-start.worker';

/** optimization: the step driver of distributed runs (`RunStarted` -> steps -> `RunCompleted`). `env` defaults to `process.env`. */
@Module({})
export class OptimizationModule {
  static forRoot(env: Record<string, string | undefined> = process.env): DynamicModule {
    return {
      module: OptimizationModule,
      imports: [ServiceConfigModule.forRoot(optimizationEnv, env), HealthModule.forService('optimization'), MetricsModule, BusModule.forRootAsync(), EventStoreModule.forRootAsync()],
      providers: [RunStartWorker],
    };
  }
}
