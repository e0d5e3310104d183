import { Module, type DynamicModule } from '@nestjs/common';
import { BusModule, EventStoreModule, HealthModule, MetricsModule, ReadModelsModule, ServiceConfigModule } from '@rstar/nest-runtime';
import { ArchiveController } from './archive.controller';
import { ArchiverWorker } from './archiver.worker';
import { controlPlaneEnv } from './control-plane.config';
import { KafkaExportWorker } from './kafka-export.worker';
import { ProjectionsController } from './projections.controller';
import { ProjectorWorker } from './projector.worker';
import { RunsController } from './runs.controller';
import { LiveController } from './views/live.controller';
import { RunViewsProvider } from './views/run-views.provider';
import { UiController } from './views/ui.controller';
import { SessionController } from './views/session.controller';
import { ViewsController } from './views/views.controller';

/**
 * control-plane: the archiver (bus -> Postgres), the projector (archive -> read models, unless
 * RSTAR_PROJECTOR=off), the optional Kafka export (RSTAR_KAFKA_BROKERS), the runs API and the dashboard
 * (`/ui`, `/v1/views`, `/v1/live`). `env` defaults to `process.env`.
 */
@Module({})
export class ControlPlaneModule {
  static forRoot(env: Record<string, string | undefined> = process.env): DynamicModule {
    return {
      module: ControlPlaneModule,
      imports: [
        ServiceConfigModule.forRoot(controlPlaneEnv, env), HealthModule.forService('control-plane'), MetricsModule,
        BusModule.forRootAsync(), EventStoreModule.forRootAsync(), ReadModelsModule.forRootAsync(),
      ],
      controllers: [RunsController, ArchiveController, ProjectionsController, ViewsController, LiveController, UiController, SessionController],
      providers: [ArchiverWorker, KafkaExportWorker, RunViewsProvider, ...(env.RSTAR_PROJECTOR === 'off' ? [] : [ProjectorWorker])],
    };
  }
}
