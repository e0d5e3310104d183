import 'reflect-metadata';
import { Controller, Get, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { EventType, RstarEvent } from '@rstar/contracts';
import { EventStore } from '@rstar/event-store';
import { JetStreamBus, ServiceLifecycle, jetStreamOptionsFromEnv } from '@rstar/messaging';
import { createLogger } from '@rstar/telemetry';
import { ResamplingHandler, type ResamplingEventSource } from './resampling.handler';

const log = createLogger('resampling');

/** A missing or bad setting; the message names the variable and the fix. */
class ResamplingConfigError extends Error {
  readonly code = 'invalid_service_config';
  constructor(message: string, readonly field: string) {
    super(message);
    this.name = 'ResamplingConfigError';
  }
}

/** Every archived event of some types, page by page (the handler rebuilds its open groups from them). */
function archiveSource(store: EventStore): ResamplingEventSource {
  return {
    async readEvents(types: readonly EventType[]) {
      const out: RstarEvent[] = [];
      let after: Awaited<ReturnType<EventStore['readAll']>>['last'] | undefined;
      for (;;) {
        const page = await store.readAll({ after, limit: 1000 });
        for (const e of page.events) if (types.includes(e.type)) out.push(e);
        if (page.events.length < 1000) return out;
        after = page.last;
      }
    },
  };
}

@Controller()
class HealthController {
  @Get('health')
  health() {
    return { ok: true };
  }
}

/**
 * The resampling service in distributed mode: RSTAR_NATS_URL (default nats://127.0.0.1:4222),
 * RSTAR_DATABASE_URL (required: the archive it rebuilds open groups from after a restart), PORT (default
 * 3004, `/health`). Thin wiring around {@link ResamplingHandler}; the durable consumer `resampling`
 * resumes where a killed instance stopped.
 */
async function bootstrap(): Promise<void> {
  const databaseUrl = process.env.RSTAR_DATABASE_URL;
  if (!databaseUrl) throw new ResamplingConfigError('RSTAR_DATABASE_URL is not set (the Postgres archive, e.g. postgres://rstar:rstar@127.0.0.1:5432/rstar)', 'RSTAR_DATABASE_URL');
  const port = Number(process.env.PORT ?? 3004);
  if (!Number.isInteger(port) || port < 0) throw new ResamplingConfigError(`PORT must be a port number, got "${process.env.PORT}"`, 'PORT');
  const bus = await JetStreamBus.connect(jetStreamOptionsFromEnv('resampling'));
  const store = await EventStore.connect({ connectionString: databaseUrl, schema: process.env.RSTAR_DB_SCHEMA || undefined });
  const handler = new ResamplingHandler(bus, { store: archiveSource(store) });

  @Module({
    controllers: [HealthController],
    providers: [
      { provide: ServiceLifecycle, useValue: new ServiceLifecycle([handler, { stop: () => bus.close() }, { stop: () => store.close() }], (err) => log.warn('stop failed', { err })) },
    ],
  })
  class ResamplingModule {}

  const app = await NestFactory.create(ResamplingModule, { logger: ['error', 'warn'] });
  app.enableShutdownHooks();
  await app.listen(port);
  log.info('resampling listening', { port });
}

bootstrap().catch((e) => {
  log.error('resampling failed to start', { err: e });
  process.exit(1);
});
