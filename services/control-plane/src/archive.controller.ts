import { Controller, Get } from '@nestjs/common';
import { RequireScope, StoreConnection } from '@rstar/nest-runtime';
import { ArchiverWorker } from './archiver.worker';

/** `GET /v1/archive`: events archived and the archiver's lag (events on the stream not yet stored). */
@Controller('v1/archive')
@RequireScope('read')
export class ArchiveController {
  constructor(private readonly store: StoreConnection, private readonly archiver: ArchiverWorker) {}

  @Get()
  async status() {
    return { events: await this.store.current().count(), archiverLag: await this.archiver.lag() };
  }
}
