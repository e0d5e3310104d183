import 'reflect-metadata';
import { Controller, Get, Inject, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { RunStartConsumer } from '@rstar/cli';
import { EventStore } from '@rstar/event-store';
import { JetStreamBus, ServiceLifecycle, jetStreamOptionsFromEnv } from '@rstar/messaging';
import { createEngines } from '@rstar/engines';
import { createLogger } from '@rstar/telemetry';

const RUNNER = Symbol('RUNNER');
const log = createLogger('optimization');

/** A missing or bad setting; the message names the variable and the fix. */
class OptimizationConfigError extends Error {
  readonly code = 'invalid_service_config';
  constructor(message: string, readonly field: string) {
    super(message);
    this.name = 'OptimizationConfigError';
  }
}

@Controller()
class HealthController {
  constructor(@Inject(RUNNER) private readonly runner: RunStartConsumer) {}
  @Get('health')
  health() {
    return { ok: true, activeRun: this.runner.active };
  }
}

/**
 * The optimization service in distributed mode. Settings: RSTAR_NATS_URL (default nats://127.0.0.1:4222),
 * RSTAR_DATABASE_URL (required: the archive, for resume), RSTAR_ENGINES (comma-separated `kind=url`, the
 * engines whose weights it updates; required), RSTAR_CHECKPOINT_DIR (default ./runs; must be readable by
 * the engines), PORT (default 3005, `/health`). Runs start on `RunStarted` (RunStartConsumer in @rstar/cli).
 */
async function bootstrap(): Promise<void> {
  const env = process.env;
  if (!env.RSTAR_DATABASE_URL) throw new OptimizationConfigError('RSTAR_DATABASE_URL is not set (the Postgres archive the run resumes from)', 'RSTAR_DATABASE_URL');
  const engines = (env.RSTAR_ENGINES ?? '').split(',').map((s) => s.trim()).filter(Boolean);
  if (!engines.length) throw new OptimizationConfigError('RSTAR_ENGINES is empty; set it to the engines policy-serving uses, e.g. "builtin=http://127.0.0.1:30001"', 'RSTAR_ENGINES');
  const port = Number(env.PORT ?? 3005);
  if (!Number.isInteger(port) || port < 0) throw new OptimizationConfigError(`PORT must be a port number, got "${env.PORT}"`, 'PORT');
  const bus = await JetStreamBus.connect(jetStreamOptionsFromEnv('optimization', env));
  const store = await EventStore.connect({ connectionString: env.RSTAR_DATABASE_URL, schema: env.RSTAR_DB_SCHEMA || undefined });
  const runner = new RunStartConsumer(bus, store, {
    engines: createEngines(engines), checkpointRoot: env.RSTAR_CHECKPOINT_DIR || 'runs', log: (msg, fields) => log.info(msg, fields),
  });

  @Module({ controllers: [HealthController], providers: [
    { provide: RUNNER, useValue: runner },
    { provide: ServiceLifecycle, useValue: new ServiceLifecycle([runner, { stop: () => bus.close() }, { stop: () => store.close() }], (err) => log.warn('stop failed', { err })) },
  ] })
  class OptimizationModule {}

  const app = await NestFactory.create(OptimizationModule, { logger: ['error', 'warn'] });
  app.enableShutdownHooks();
  await app.listen(port);
  log.info('optimization listening', { port, engines });
}

bootstrap().catch((e) => {
  log.error('optimization failed to start', { err: e });
  process.exit(1);
});
