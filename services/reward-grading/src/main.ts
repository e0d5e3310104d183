import 'reflect-metadata';
import { Controller, Get, Header, Inject, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { SympySandboxBackend } from '@rstar/grader';
import { JetStreamBus, ServiceLifecycle, jetStreamOptionsFromEnv } from '@rstar/messaging';
import { SandboxPool } from '@rstar/sandbox';
import { collectProcessMetrics, createLogger, metricsRegistry } from '@rstar/telemetry';
import { RewardGradingHandler } from './reward-grading.handler';

const POOL = Symbol('POOL');
const log = createLogger('reward-grading');

/** Health and Prometheus metrics. */
@Controller()
class HealthController {
  constructor(@Inject(POOL) private readonly pool: SandboxPool) {}

  @Get('health')
  async health() {
    const sandbox = await this.pool.health();
    return { ok: true, symbolicBackend: sandbox.ok, sandbox };
  }

  @Get('metrics')
  @Header('Content-Type', 'text/plain; version=0.0.4')
  async metrics() {
    return metricsRegistry.metrics();
  }
}

async function bootstrap(): Promise<void> {
  const port = Number(process.env.PORT ?? 3004);
  const natsUrl = process.env.RSTAR_NATS_URL ?? 'nats://127.0.0.1:4222';
  const timeoutMs = Number(process.env.GRADER_SYMBOLIC_TIMEOUT_MS ?? 4000);
  if (!Number.isFinite(port) || !Number.isFinite(timeoutMs)) throw new Error('PORT and GRADER_SYMBOLIC_TIMEOUT_MS must be numbers');
  collectProcessMetrics();
  const bus = await JetStreamBus.connect({ ...jetStreamOptionsFromEnv('reward-grading'), servers: natsUrl });
  // A small pool of its own for sympy checks, as rStar2 sends verification to its code service.
  const pool = new SandboxPool({ workers: Number(process.env.GRADER_SANDBOX_WORKERS ?? 2) });
  await pool.start();
  const handler = new RewardGradingHandler(bus, { symbolic: new SympySandboxBackend(pool), timeoutMs });

  @Module({
    controllers: [HealthController],
    providers: [
      { provide: POOL, useValue: pool },
      { provide: ServiceLifecycle, useValue: new ServiceLifecycle([handler, { stop: () => bus.close() }, { stop: () => pool.close() }], (err) => log.warn('stop failed', { err })) },
    ],
  })
  class RewardGradingModule {}

  const app = await NestFactory.create(RewardGradingModule, { logger: ['error', 'warn'] });
  app.enableShutdownHooks();
  await app.listen(port);
  log.info('reward-grading listening', { port, natsUrl, timeoutMs });
}

bootstrap().catch((e) => {
  log.error('reward-grading failed to start', { err: e });
  process.exit(1);
});
