import type { OnApplicationShutdown, OnModuleInit } from '@nestjs/common';

/** A piece of a running service (a handler, a bus, a store, a pool): what to do at start and at stop. */
export interface ServicePart {
  start?: () => Promise<void>;
  stop?: () => Promise<void>;
}

/**
 * The lifecycle every service main wires into Nest (as a `useValue` provider): after the module is
 * built it starts the parts in order; on shutdown (SIGTERM with `enableShutdownHooks`) it stops them in
 * reverse order, so a handler drains before the bus and store it writes to are closed. A part that
 * fails to stop is logged by the caller's `onError` and the others still stop.
 */
export class ServiceLifecycle implements OnModuleInit, OnApplicationShutdown {
  constructor(
    private readonly parts: readonly ServicePart[],
    private readonly onError: (err: unknown) => void = () => undefined,
  ) {}

  async onModuleInit(): Promise<void> {
    for (const p of this.parts) await p.start?.();
  }

  async onApplicationShutdown(): Promise<void> {
    for (const p of [...this.parts].reverse()) {
      try {
        await p.stop?.();
      } catch (e) {
        this.onError(e);
      }
    }
  }
}
