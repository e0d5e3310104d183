import 'reflect-metadata';
import { Module, type DynamicModule, type INestApplication } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { connect } from '@nats-io/transport-node';
import type { NestExpressApplication } from '@nestjs/platform-express';
import type { EventBus } from '@rstar/messaging';
import { SandboxPool, type SandboxPoolOptions } from '@rstar/sandbox';
import { CodeJudgeController } from './code-judge.controller';
import { ExecuteController } from './execute.controller';
import { NatsExecuteResponder, TOOL_EXECUTE_SUBJECT } from './nats-execute.responder';
import { SandboxFusionController } from './sandbox-fusion.controller';
import { SANDBOX_POOL, TOOL_METRICS } from './tokens';
import { ToolExecutionHandler } from './tool-execution.handler';
import { ToolExecutionMetrics } from './tool-execution.metrics';

@Module({})
class ToolExecutionModule {
  static forPool(pool: SandboxPool, metrics: ToolExecutionMetrics): DynamicModule {
    return {
      module: ToolExecutionModule,
      controllers: [ExecuteController, SandboxFusionController, CodeJudgeController],
      providers: [
        { provide: SANDBOX_POOL, useValue: pool },
        { provide: TOOL_METRICS, useValue: metrics },
      ],
    };
  }
}

/** Options of {@link startToolExecution}. */
export interface ToolExecutionOptions {
  pool?: SandboxPoolOptions;
  /** HTTP port (0 = any free port). */
  port?: number;
  host?: string;
  /** Core NATS URL for `tool.execute` request/reply (unset = no NATS responder). */
  natsUrl?: string;
  /** Request/reply subject (default `tool.execute`; tests give each run its own). */
  subject?: string;
  /** Event bus for the `ToolCallRequested` -> `ToolCallCompleted` flow (unset = no bus consumer). */
  bus?: EventBus;
  durable?: string;
}

/** A running tool-execution instance. */
export interface ToolExecution {
  app: INestApplication;
  pool: SandboxPool;
  url: string;
  metrics: ToolExecutionMetrics;
  close(): Promise<void>;
}

/**
 * Start tool-execution: warm the sandbox pool, then serve HTTP, and when configured the NATS
 * request/reply subject and the bus flow. `close()` stops taking work, answers what is in flight and
 * tears the pool down (no process or file left).
 */
export async function startToolExecution(opts: ToolExecutionOptions = {}): Promise<ToolExecution> {
  const pool = new SandboxPool(opts.pool);
  await pool.start();
  const metrics = new ToolExecutionMetrics(pool);
  let nc: Awaited<ReturnType<typeof connect>> | null = null;
  let responder: NatsExecuteResponder | null = null;
  let handler: ToolExecutionHandler | null = null;
  try {
    const app = await NestFactory.create<NestExpressApplication>(ToolExecutionModule.forPool(pool, metrics), {
      logger: ['error', 'warn'],
    });
    // Requests carry code and stdin (up to the pool's input maximum).
    app.useBodyParser('json', { limit: '40mb' });
    // No ETag (a SHA-1 of every result body, ~0.2 ms CPU per call, measured; results are never
    // re-validated) and no X-Powered-By.
    app.set('etag', false);
    app.disable('x-powered-by');
    await app.listen(opts.port ?? 0, opts.host ?? '127.0.0.1');
    // Training clients keep connections open between bursts of calls: a server closing idle ones after
    // Node's default 5 s races their reuse (the client sees a reset). Close them after 65 s instead.
    const server = app.getHttpServer() as { keepAliveTimeout: number; headersTimeout: number };
    server.keepAliveTimeout = 65_000;
    server.headersTimeout = 66_000;
    const url = (await app.getUrl()).replace('[::1]', '127.0.0.1');
    if (opts.natsUrl) {
      nc = await connect({ servers: opts.natsUrl, name: 'tool-execution' });
      responder = new NatsExecuteResponder(nc, pool, { subject: opts.subject ?? TOOL_EXECUTE_SUBJECT, metrics });
      responder.start();
    }
    if (opts.bus) {
      handler = new ToolExecutionHandler(opts.bus, pool, { metrics, durable: opts.durable });
      await handler.start();
    }
    return {
      app,
      pool,
      url,
      metrics,
      close: async () => {
        await handler?.stop();
        await responder?.stop();
        await nc?.drain().catch(() => undefined);
        await app.close();
        await pool.close();
      },
    };
  } catch (e) {
    await nc?.close().catch(() => undefined);
    await pool.close();
    throw e;
  }
}
