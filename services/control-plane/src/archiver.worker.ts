import { Inject, Injectable } from '@nestjs/common';
import { ConfigService } from '@nestjs/config';
import { BackgroundWorker, BusConnection, ReadinessRegistry, SECURITY_SETTINGS, StoreConnection, type Stoppable } from '@rstar/nest-runtime';
import type { SecuritySettings } from '@rstar/security';
import { Archiver } from '@rstar/runtime';
import type { ControlPlaneEnv } from './control-plane.config';

/**
 * The archiver of distributed mode: every event on the bus into Postgres, in batches, acked after the
 * commit (durable `archiver`). Crash safety: a restarted control plane resumes the same durable; batches
 * the dead one held are redelivered after RSTAR_ARCHIVER_ACK_WAIT_MS and rows already committed are
 * dropped by `ON CONFLICT (id) DO NOTHING`, so the archive ends with every event exactly once. It signs
 * checkpoints of each run's chain with the control plane's key (see `Archiver`).
 */
@Injectable()
export class ArchiverWorker extends BackgroundWorker {
  private archiver: Archiver | null = null;

  constructor(
    private readonly bus: BusConnection,
    private readonly store: StoreConnection,
    private readonly cfg: ConfigService<ControlPlaneEnv, true>,
    @Inject(SECURITY_SETTINGS) private readonly security: SecuritySettings,
    registry: ReadinessRegistry,
  ) {
    super('archiver', registry);
  }

  /** Events published but not archived yet, or null before the archiver runs. */
  async lag(): Promise<number | null> {
    return this.archiver ? this.archiver.lag() : null;
  }

  protected async launch(): Promise<Stoppable> {
    const [bus, store] = await Promise.all([this.bus.ready(), this.store.ready()]);
    // Its chain checkpoints are signed with the control plane's key (secured mode).
    const archiver = new Archiver(bus, store, { ackWaitMs: this.cfg.get('RSTAR_ARCHIVER_ACK_WAIT_MS', { infer: true }), logger: this.log, signer: this.security.signer });
    await archiver.start();
    this.archiver = archiver;
    return archiver;
  }
}
