import 'reflect-metadata';
import { runService } from '@rstar/nest-runtime';
import { RewardGradingModule } from './reward-grading.module';

/** reward-grading: settings in reward-grading.config.ts; port 3003 by default. */
void runService(() => RewardGradingModule.forRoot(), 'reward-grading');
