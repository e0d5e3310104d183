import 'reflect-metadata';
import { connectRuntime, type Runtime } from '@rstar/runtime';
import { startToolExecution } from './tool-execution.app';

/**
 * The tool-execution service (distributed mode). Env: PORT (default 3001), RSTAR_NATS_URL (set =
 * `tool.execute` request/reply and the JetStream `ToolCallRequested` flow), RSTAR_SANDBOX_WORKERS,
 * RSTAR_PYTHON. Prints one JSON line `{"event":"listening","url":...}` once ready.
 */
async function main(): Promise<void> {
  const port = Number(process.env.PORT ?? 3001);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`PORT must be an integer in 0..65535, got "${process.env.PORT}"`);
  const workers = process.env.RSTAR_SANDBOX_WORKERS ? Number(process.env.RSTAR_SANDBOX_WORKERS) : undefined;
  const natsUrl = process.env.RSTAR_NATS_URL || undefined;
  let runtime: Runtime | null = null;
  if (natsUrl) runtime = await connectRuntime({ natsUrl, archive: false, name: 'tool-execution', stream: process.env.RSTAR_STREAM || undefined, subjectPrefix: process.env.RSTAR_SUBJECT_PREFIX || undefined, schema: process.env.RSTAR_DB_SCHEMA || undefined });
  const svc = await startToolExecution({ port, host: '0.0.0.0', natsUrl, bus: runtime?.bus, pool: { workers } });
  process.stdout.write(JSON.stringify({ event: 'listening', url: svc.url, health: svc.pool.health() }) + '\n');
  let stopping = false;
  const stop = () => {
    if (stopping) return;
    stopping = true;
    svc
      .close()
      .then(() => runtime?.close())
      .then(
        () => process.exit(0),
        () => process.exit(1),
      );
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

main().catch((e) => {
  process.stderr.write(`tool-execution: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
  process.exit(1);
});
