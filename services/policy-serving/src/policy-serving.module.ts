import { Module, type DynamicModule } from '@nestjs/common';
import { BusModule, HealthModule, MetricsModule, ServiceConfigModule } from '@rstar/nest-runtime';
import { EnginesController } from './engines.controller';
import { policyServingEnv } from './policy-serving.config';
import { RolloutsWorker } from './rollouts.worker';

/** policy-serving: multi-turn tool rollouts on the inference engines. `env` defaults to `process.env`. */
@Module({})
export class PolicyServingModule {
  static forRoot(env: Record<string, string | undefined> = process.env): DynamicModule {
    return {
      module: PolicyServingModule,
      imports: [ServiceConfigModule.forRoot(policyServingEnv, env), HealthModule.forService('policy-serving'), MetricsModule, BusModule.forRootAsync()],
      controllers: [EnginesController],
      providers: [RolloutsWorker],
    };
  }
}
