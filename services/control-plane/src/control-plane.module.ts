import { Module, type DynamicModule } from '@nestjs/common';
import type { Runtime } from '@rstar/runtime';
import { HealthController } from './health.controller';
import { RunsController } from './runs.controller';
import { RUNTIME } from './tokens';

/** Nest wiring of the control plane around an already-connected {@link Runtime}. */
@Module({})
export class ControlPlaneModule {
  static forRuntime(runtime: Runtime): DynamicModule {
    return {
      module: ControlPlaneModule,
      controllers: [RunsController, HealthController],
      providers: [{ provide: RUNTIME, useValue: runtime }],
    };
  }
}
