import 'reflect-metadata';
import { createLogger } from '@rstar/telemetry';
import { controlPlaneEnv, startControlPlane } from './control-plane.app';

/**
 * The control-plane service. Env: RSTAR_NATS_URL, RSTAR_DATABASE_URL (both unset = standalone on
 * PGlite), PORT (default 3000), RSTAR_ARCHIVER_ACK_WAIT_MS, and for isolation RSTAR_DB_SCHEMA, RSTAR_STREAM,
 * RSTAR_SUBJECT_PREFIX.
 * Prints one JSON line `{"event":"listening","url":...}` on stdout once ready.
 *
 * Crash safety (SIGKILL mid-run): the archiver's durable consumer has a fixed name (`archiver`) and acks
 * a batch only after it committed, so a restarted control plane resumes where the dead one left off;
 * batches it had in flight are redelivered after RSTAR_ARCHIVER_ACK_WAIT_MS (default 30 s) and rows
 * that had already committed are dropped by `ON CONFLICT (id) DO NOTHING`: the archive ends with every
 * published event exactly once.
 */
async function main(): Promise<void> {
  const log = createLogger('control-plane');
  const cp = await startControlPlane(controlPlaneEnv());
  process.stdout.write(JSON.stringify({ event: 'listening', url: cp.url, mode: cp.runtime.mode }) + '\n');
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info('shutting down', { signal });
    cp.close().then(
      () => process.exit(0),
      (e) => {
        log.error('shutdown failed', { err: e });
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
}

main().catch((e) => {
  process.stderr.write(`control-plane: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
  process.exit(1);
});
