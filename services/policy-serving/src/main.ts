import 'reflect-metadata';
import { Controller, Get, Inject, Injectable, Module, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { JetStreamBus } from '@rstar/messaging';
import { Tokenizer } from '@rstar/policy';
import { createLogger } from '@rstar/telemetry';
import { createEngines } from './engine/engine.factory';
import { EnginePool } from './engine/engine.pool';
import { PolicyServingHandler } from './policy-serving.handler';
import { readConfig, type PolicyServingConfig } from './policy-serving.config';

const CONFIG = Symbol('CONFIG');
const HANDLER = Symbol('HANDLER');
const POOL = Symbol('POOL');
const BUS = Symbol('BUS');
const log = createLogger('policy-serving');

/** Health and the scheduler's view of the engines. */
@Controller()
class HealthController {
  constructor(@Inject(POOL) private readonly pool: EnginePool, @Inject(HANDLER) private readonly handler: PolicyServingHandler) {}

  @Get('health')
  health() {
    const engines = this.pool.scheduler.snapshot();
    return { ok: engines.some((e) => e.up), policyVersion: this.handler.policyVersion, policy: this.handler.policy, durables: this.handler.durables };
  }

  @Get('v1/engines')
  engines() {
    return { policy: this.pool.scheduler.policy, engines: this.pool.scheduler.snapshot(), waiting: this.pool.scheduler.waiting().length, stats: this.pool.scheduler.stats };
  }
}

/** Starts the handler after wiring and drains it on shutdown. */
@Injectable()
class Lifecycle implements OnModuleInit, OnApplicationShutdown {
  constructor(@Inject(HANDLER) private readonly handler: PolicyServingHandler, @Inject(BUS) private readonly bus: JetStreamBus) {}
  async onModuleInit() {
    await this.handler.start();
  }
  async onApplicationShutdown() {
    await this.handler.stop();
    await this.bus.close();
  }
}

async function bootstrap(): Promise<void> {
  const config = readConfig();
  const bus = await JetStreamBus.connect({ servers: config.natsUrl, stream: config.stream, subjectPrefix: config.subjectPrefix, name: 'policy-serving' });
  const pool = await EnginePool.create(createEngines(config.engines), config.policy, {
    onEngineState: (id, up, reason) => log.warn(up ? 'engine back in rotation' : 'engine out of rotation', { engineId: id, reason }),
  });
  const handler = new PolicyServingHandler(bus, {
    pool,
    tokenizer: new Tokenizer(),
    compactPrompt: config.compactPrompt,
    concurrency: config.concurrency,
    initialPolicyVersion: config.initialPolicyVersion,
    instanceId: config.instanceId,
    ackWaitMs: config.ackWaitMs,
  });

  @Module({
    controllers: [HealthController],
    providers: [
      { provide: CONFIG, useValue: config satisfies PolicyServingConfig },
      { provide: BUS, useValue: bus },
      { provide: POOL, useValue: pool },
      { provide: HANDLER, useValue: handler },
      { provide: Lifecycle, useClass: Lifecycle },
    ],
  })
  class PolicyServingModule {}

  const app = await NestFactory.create(PolicyServingModule, { logger: ['error', 'warn'] });
  app.enableShutdownHooks();
  await app.listen(config.port);
  log.info('policy-serving listening', { port: config.port, engines: config.engines, policy: config.policy, instanceId: config.instanceId });
}

bootstrap().catch((e) => {
  log.error('policy-serving failed to start', { err: e });
  process.exit(1);
});
