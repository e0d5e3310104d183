import { createServer } from 'node:net';
import { isLoopbackHost } from '@rstar/security';

/** The store port of a weight-update group when the config names none and the trainer is on another host. */
export const DEFAULT_WEIGHT_SYNC_PORT = 29650;

/**
 * The TCP port of a weight-update group's store on the trainer's host (docs/design/protocol.md §9).
 * `trainer.weightSyncPort` when the config sets it. Otherwise, a trainer on this machine (a loopback URL, as
 * `rstar train` starts it) gets a port the OS reports free now, so that two local runs, or a run and a test,
 * never both bind 29650 (the second failed its group with EADDRINUSE); a trainer on another host gets
 * {@link DEFAULT_WEIGHT_SYNC_PORT}, the port the deployment opens to the engines (docs/deploy.md).
 */
export async function weightSyncPort(configured: number | undefined, trainerHost: string): Promise<number> {
  if (configured !== undefined) return configured;
  if (!isLoopbackHost(trainerHost)) return DEFAULT_WEIGHT_SYNC_PORT;
  return new Promise<number>((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}
