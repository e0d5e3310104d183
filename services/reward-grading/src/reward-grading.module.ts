import { Module, type DynamicModule } from '@nestjs/common';
import { BusModule, HealthModule, MetricsModule, ServiceConfigModule } from '@rstar/nest-runtime';
import { rewardGradingEnv } from './reward-grading.config';
import { RewardsWorker, SympyPool } from './rewards.worker';

/** reward-grading: `RolloutCompleted` -> `RewardAssigned` (the answer-only math reward). `env` defaults to `process.env`. */
@Module({})
export class RewardGradingModule {
  static forRoot(env: Record<string, string | undefined> = process.env): DynamicModule {
    return {
      module: RewardGradingModule,
      imports: [ServiceConfigModule.forRoot(rewardGradingEnv, env), HealthModule.forService('reward-grading'), MetricsModule, BusModule.forRootAsync()],
      providers: [SympyPool, RewardsWorker],
    };
  }
}
