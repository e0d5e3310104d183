import { RstarError } from '@rstar/contracts';
import { backoffDelay, delay } from '@rstar/messaging';
import type { Logger } from '@rstar/telemetry';

/** What a dependency reports for the readiness route. */
export interface DependencyState {
  name: string;
  ready: boolean;
  /** Connection attempts so far (1 = connected at the first try). */
  attempts: number;
  /** The last connection error, while not ready. */
  lastError: string | null;
}

/** Thrown by {@link Dependency.current} while the dependency is not connected yet. */
export class DependencyNotReadyError extends RstarError {
  constructor(readonly dependency: string, lastError: string | null) {
    super('dependency_not_ready', `${dependency} is not connected yet${lastError ? ` (last attempt: ${lastError})` : ''}; see /health/ready`);
  }
}

/**
 * Something a service needs that may come up after it (NATS, Postgres, an inference engine): `start()`
 * begins connecting in the background and retries with exponential backoff (250 ms doubling to 10 s,
 * with jitter) until `connect` succeeds, so a service started before its dependency waits and reports
 * not-ready instead of exiting. `ready()` resolves with the connected value; `close()` stops retrying
 * and disposes of the value. Errors that cannot heal (bad settings) should be thrown at config time,
 * not here: everything thrown by `connect` is retried and logged.
 */
export class Dependency<T> {
  private value: T | null = null;
  private attempts = 0;
  private lastError: string | null = null;
  private closed = false;
  private loop: Promise<void> | null = null;
  private readonly waiters: Array<(v: T) => void> = [];

  constructor(
    readonly name: string,
    private readonly connect: () => Promise<T>,
    private readonly dispose: (v: T) => Promise<void>,
    private readonly log: Logger,
  ) {}

  /** Start connecting (idempotent); never throws. */
  start(): void {
    this.loop ??= this.run();
  }

  private async run(): Promise<void> {
    while (!this.closed) {
      this.attempts++;
      try {
        const v = await this.connect();
        if (this.closed) {
          await this.dispose(v).catch(() => undefined);
          return;
        }
        this.value = v;
        this.lastError = null;
        if (this.attempts > 1) this.log.info(`${this.name} connected`, { attempts: this.attempts });
        for (const w of this.waiters.splice(0)) w(v);
        return;
      } catch (e) {
        this.lastError = (e as Error).message;
        // The first failure and then every tenth, so a long wait does not flood the log.
        if (this.attempts === 1 || this.attempts % 10 === 0) {
          this.log.warn(`${this.name} not reachable yet; retrying`, { attempts: this.attempts, err: e });
        }
        await delay(backoffDelay(this.attempts, 250, 10_000));
      }
    }
  }

  /** The connected value. @throws DependencyNotReadyError before it is connected. */
  current(): T {
    if (this.value === null) throw new DependencyNotReadyError(this.name, this.lastError);
    return this.value;
  }

  /** Resolves once connected (starts connecting if needed). */
  ready(): Promise<T> {
    this.start();
    if (this.value !== null) return Promise.resolve(this.value);
    return new Promise((res) => this.waiters.push(res));
  }

  state(): DependencyState {
    return { name: this.name, ready: this.value !== null, attempts: this.attempts, lastError: this.lastError };
  }

  /** Stop retrying and dispose of the value, if connected. */
  async close(): Promise<void> {
    this.closed = true;
    const v = this.value;
    this.value = null;
    if (v !== null) await this.dispose(v);
  }
}
