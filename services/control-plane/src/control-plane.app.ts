import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import type { INestApplication } from '@nestjs/common';
import { connectRuntime, type Runtime, type RuntimeOptions } from '@rstar/runtime';
import { collectProcessMetrics, createLogger } from '@rstar/telemetry';
import { ControlPlaneModule } from './control-plane.module';

export interface ControlPlane {
  app: INestApplication;
  runtime: Runtime;
  /** The URL the HTTP API listens on. */
  url: string;
  close(): Promise<void>;
}

/**
 * Start the control plane: connect the runtime with an archiver (it is the archiver of distributed
 * mode), then serve the runs API, `/health` and `/metrics` on `port` (0 = any free port).
 */
export async function startControlPlane(opts: RuntimeOptions & { port?: number } = {}): Promise<ControlPlane> {
  collectProcessMetrics();
  const runtime = await connectRuntime({ ...opts, archive: opts.archive ?? true, name: opts.name ?? 'control-plane' });
  const app = await NestFactory.create(ControlPlaneModule.forRuntime(runtime), { logger: ['error', 'warn'] });
  await app.listen(opts.port ?? 0, '127.0.0.1');
  const url = (await app.getUrl()).replace('[::1]', '127.0.0.1');
  return {
    app,
    runtime,
    url,
    close: async () => {
      await app.close();
      await runtime.close();
    },
  };
}

/**
 * RSTAR_ARCHIVER_ACK_WAIT_MS: how long the archiver's unacked batches wait before JetStream redelivers
 * them (after a crash, to the restarted control plane); an integer >= 1000.
 */
function archiverAckWait(raw: string): number {
  const ms = Number(raw);
  if (!Number.isInteger(ms) || ms < 1000) throw new Error(`RSTAR_ARCHIVER_ACK_WAIT_MS must be an integer >= 1000 (milliseconds), got "${raw}"`);
  return ms;
}

/**
 * Read the control plane's settings from the environment (see `main.ts`).
 * @throws Error naming the variable (PORT, RSTAR_ARCHIVER_ACK_WAIT_MS) for a bad value.
 */
export function controlPlaneEnv(env: NodeJS.ProcessEnv = process.env): RuntimeOptions & { port: number } {
  const port = Number(env.PORT ?? 3000);
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    throw new Error(`PORT must be an integer in 0..65535, got "${env.PORT}"`);
  }
  return {
    natsUrl: env.RSTAR_NATS_URL || undefined,
    databaseUrl: env.RSTAR_DATABASE_URL || undefined,
    schema: env.RSTAR_DB_SCHEMA || undefined,
    stream: env.RSTAR_STREAM || undefined,
    subjectPrefix: env.RSTAR_SUBJECT_PREFIX || undefined,
    dataDir: env.RSTAR_DATA_DIR || undefined,
    archiver: env.RSTAR_ARCHIVER_ACK_WAIT_MS ? { ackWaitMs: archiverAckWait(env.RSTAR_ARCHIVER_ACK_WAIT_MS) } : undefined,
    port,
    logger: createLogger('control-plane'),
  };
}
