import 'reflect-metadata';
import { runService } from '@rstar/nest-runtime';
import { OptimizationModule } from './optimization.module';

/** optimization: settings in optimization.config.ts; port 3005 by default. */
void runService(() => OptimizationModule.forRoot(), 'optimization');
