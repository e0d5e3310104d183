import { Module, type DynamicModule } from '@nestjs/common';
import { BusModule, EventStoreModule, HealthModule, MetricsModule, ReadModelsModule, ServiceConfigModule } from '@rstar/nest-runtime';
import { resamplingEnv } from './resampling.config';
import { ResamplingWorker } from './resampling.worker';

/** resampling: GRPO-RoC over each group's rewards. `env` defaults to `process.env`. */
@Module({})
export class ResamplingModule {
  static forRoot(env: Record<string, string | undefined> = process.env): DynamicModule {
    return {
      module: ResamplingModule,
      imports: [ServiceConfigModule.forRoot(resamplingEnv, env), HealthModule.forService('resampling'), MetricsModule, BusModule.forRootAsync(), EventStoreModule.forRootAsync(), ReadModelsModule.forRootAsync()],
      providers: [ResamplingWorker],
    };
  }
}
