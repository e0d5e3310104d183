import 'reflect-metadata';
import { runService } from '@rstar/nest-runtime';
import { PolicyServingModule } from './policy-serving.module';

/** policy-serving: settings in policy-serving.config.ts; port 3001 by default. */
void runService(() => PolicyServingModule.forRoot(), 'policy-serving');
