import { Controller, Get, Optional } from '@nestjs/common';
import { RequireScope } from '@rstar/nest-runtime';
import { KafkaExportWorker } from './kafka-export.worker';
import { ProjectorWorker } from './projector.worker';

/**
 * `GET /v1/projections` -> `{ readModels, kafka }`: where the projector and the Kafka export stand
 * (events applied or exported, and the archive events still ahead of them); null for one that is off.
 */
@Controller('v1/projections')
@RequireScope('read')
export class ProjectionsController {
  constructor(
    private readonly kafka: KafkaExportWorker,
    @Optional() private readonly projector?: ProjectorWorker,
  ) {}

  @Get()
  async status() {
    const p = this.projector?.current;
    const readModels = p ? { ...(await p.checkpoint()), lag: await p.lag() } : null;
    return { readModels, kafka: await this.kafka.status() };
  }
}
