import 'reflect-metadata';
import { runService } from '@rstar/nest-runtime';
import { ResamplingModule } from './resampling.module';

/** resampling: settings in resampling.config.ts; port 3004 by default. */
void runService(() => ResamplingModule.forRoot(), 'resampling');
