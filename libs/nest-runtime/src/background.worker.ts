import type { BeforeApplicationShutdown, OnApplicationBootstrap } from '@nestjs/common';
import { backoffDelay, delay } from '@rstar/messaging';
import { createLogger, type Logger } from '@rstar/telemetry';
import type { ReadinessRegistry } from './readiness.registry';

/** What a worker's launch returns: the running thing to stop at shutdown. */
export interface Stoppable {
  stop(): Promise<void>;
}

/**
 * A service's unit of work (a bus handler, a run starter): `launch()` waits for the dependencies it
 * needs (`await bus.ready()`), builds its handler and starts it. It runs in the background from
 * application bootstrap, so the HTTP server (and its readiness route) is up meanwhile; a launch that
 * throws is retried with backoff (an engine that does not answer yet). Ready once launched. At shutdown
 * (before the bus and archive close) the launched handler is stopped, so it drains first.
 */
export abstract class BackgroundWorker implements OnApplicationBootstrap, BeforeApplicationShutdown {
  protected readonly log: Logger;
  private running: Stoppable | null = null;
  private loop: Promise<void> | null = null;
  private stopping = false;
  private attempts = 0;
  private lastError: string | null = null;
  private wake: (() => void) | null = null;

  protected constructor(readonly workerName: string, registry: ReadinessRegistry) {
    this.log = createLogger(workerName);
    registry.register({
      name: workerName,
      probe: () => ({ ready: this.running !== null, details: { attempts: this.attempts, lastError: this.lastError, ...this.details() } }),
    });
  }

  /** Build and start the handler; resolves once it is running. */
  protected abstract launch(): Promise<Stoppable>;

  /** Extra fields for the readiness route (e.g. the policy version served). */
  protected details(): Record<string, unknown> {
    return {};
  }

  onApplicationBootstrap(): void {
    this.loop ??= this.run();
  }

  private async run(): Promise<void> {
    const stopped = new Promise<null>((res) => (this.wake = () => res(null)));
    while (!this.stopping) {
      this.attempts++;
      try {
        const started = await Promise.race([this.launch(), stopped]);
        if (started === null) return;
        if (this.stopping) {
          await started.stop();
          return;
        }
        this.running = started;
        this.lastError = null;
        this.log.info(`${this.workerName} started`, { attempts: this.attempts });
        return;
      } catch (e) {
        this.lastError = (e as Error).message;
        if (this.attempts === 1 || this.attempts % 10 === 0) this.log.warn(`${this.workerName} could not start yet; retrying`, { attempts: this.attempts, err: e });
        await Promise.race([delay(backoffDelay(this.attempts, 500, 10_000)), stopped]);
      }
    }
  }

  /** True once the handler runs. */
  get started(): boolean {
    return this.running !== null;
  }

  async beforeApplicationShutdown(): Promise<void> {
    this.stopping = true;
    this.wake?.();
    await this.loop;
    const r = this.running;
    this.running = null;
    if (r) await r.stop().catch((e) => this.log.warn(`${this.workerName} stop failed`, { err: e }));
  }
}
