import { Injectable } from '@nestjs/common';

/** One thing the readiness route checks: a name and a probe returning whether it is ready, with details. */
export interface ReadinessCheck {
  name: string;
  probe(): Promise<{ ready: boolean; details?: Record<string, unknown> }> | { ready: boolean; details?: Record<string, unknown> };
}

/**
 * What `/health/ready` checks: the service's dependencies (bus, archive, engines) and its workers (the
 * handlers it runs) register here. Ready = every check ready.
 */
@Injectable()
export class ReadinessRegistry {
  private readonly checks: ReadinessCheck[] = [];

  register(check: ReadinessCheck): void {
    this.checks.push(check);
  }

  all(): readonly ReadinessCheck[] {
    return this.checks;
  }
}
