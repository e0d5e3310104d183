import { Injectable } from '@nestjs/common';
import { ConfigService } from '@nestjs/config';
import { BackgroundWorker, ReadinessRegistry, ReadModelsConnection, StoreConnection, type Stoppable } from '@rstar/nest-runtime';
import type { ReadModelProjector } from '@rstar/read-models';
import type { ControlPlaneEnv } from './control-plane.config';

/**
 * The projector of distributed mode: keeps the read models (runs, steps, groups, rollouts, tool calls)
 * current from the archive, each event exactly once (its checkpoint commits with the rows). Several
 * control planes may run it: they take turns on the checkpoint's row lock.
 */
@Injectable()
export class ProjectorWorker extends BackgroundWorker {
  private projector: ReadModelProjector | null = null;

  constructor(
    private readonly store: StoreConnection,
    private readonly readModels: ReadModelsConnection,
    private readonly cfg: ConfigService<ControlPlaneEnv, true>,
    registry: ReadinessRegistry,
  ) {
    super('projector', registry);
  }

  /** The running projector, or null before it started. */
  get current(): ReadModelProjector | null {
    return this.projector;
  }

  protected async launch(): Promise<Stoppable> {
    // The archive's migrations first: the projector reads its events table.
    await this.store.ready();
    const rm = await this.readModels.ready();
    const projector = rm.projector({ batchSize: this.cfg.get('RSTAR_PROJECTOR_BATCH', { infer: true }), logger: this.log });
    projector.start();
    this.projector = projector;
    return projector;
  }
}
