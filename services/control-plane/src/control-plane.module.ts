import { Module, type DynamicModule } from '@nestjs/common';
import { BusModule, EventStoreModule, HealthModule, MetricsModule, ServiceConfigModule } from '@rstar/nest-runtime';
import { ArchiveController } from './archive.controller';
import { ArchiverWorker } from './archiver.worker';
import { controlPlaneEnv } from './control-plane.config';
import { RunsController } from './runs.controller';
import { LiveController } from './views/live.controller';
import { RunViewsProvider } from './views/run-views.provider';
import { UiController } from './views/ui.controller';
import { ViewsController } from './views/views.controller';

/** control-plane: the archiver (bus -> Postgres), the runs API and the dashboard (`/ui`, `/v1/views`, `/v1/live`). `env` defaults to `process.env`. */
@Module({})
export class ControlPlaneModule {
  static forRoot(env: Record<string, string | undefined> = process.env): DynamicModule {
    return {
      module: ControlPlaneModule,
      imports: [ServiceConfigModule.forRoot(controlPlaneEnv, env), HealthModule.forService('control-plane'), MetricsModule, BusModule.forRootAsync(), EventStoreModule.forRootAsync()],
      controllers: [RunsController, ArchiveController, ViewsController, LiveController, UiController],
      providers: [ArchiverWorker, RunViewsProvider],
    };
  }
}
