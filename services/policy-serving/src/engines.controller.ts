import { Controller, Get, ServiceUnavailableException } from '@nestjs/common';
import { RequireScope } from '@rstar/nest-runtime';
import { RolloutsWorker } from './rollouts.worker';

/** `GET /v1/engines`: the scheduler's view of the engines (capacity, reservations, up/down) and its queue. */
@Controller('v1/engines')
@RequireScope('read')
export class EnginesController {
  constructor(private readonly worker: RolloutsWorker) {}

  @Get()
  engines() {
    const pool = this.worker.enginePool;
    if (!pool) throw new ServiceUnavailableException('the engines have not answered yet (see /health/ready)');
    return { policy: pool.scheduler.policy, engines: pool.scheduler.snapshot(), waiting: pool.scheduler.waiting().length, stats: pool.scheduler.stats };
  }
}
