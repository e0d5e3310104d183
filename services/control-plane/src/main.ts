import 'reflect-metadata';
import { runService } from '@rstar/nest-runtime';
import { ControlPlaneModule } from './control-plane.module';

/** control-plane: settings in control-plane.config.ts; port 3000 by default. */
void runService(() => ControlPlaneModule.forRoot(), 'control-plane');
