import { createServer } from 'node:net';
import { describe, expect, it } from 'vitest';
import { DEFAULT_WEIGHT_SYNC_PORT, weightSyncPort } from './group-port';

describe('weightSyncPort: where a weight-update group\'s store listens', () => {
  it('takes trainer.weightSyncPort when the config sets it, on any host', async () => {
    expect(await weightSyncPort(31555, '127.0.0.1')).toBe(31555);
    expect(await weightSyncPort(31555, 'trainer-worker')).toBe(31555);
  });

  it('uses the deployment\'s port for a trainer on another host (the engines reach it through the NetworkPolicy)', async () => {
    expect(await weightSyncPort(undefined, 'trainer-worker')).toBe(DEFAULT_WEIGHT_SYNC_PORT);
    expect(await weightSyncPort(undefined, '10.0.3.7')).toBe(DEFAULT_WEIGHT_SYNC_PORT);
  });

  it('gives a local trainer a port that is free now, never the default', async () => {
    for (const host of ['127.0.0.1', '127.0.0.2', 'localhost', '[::1]']) {
      const port = await weightSyncPort(undefined, host);
      expect(port).not.toBe(DEFAULT_WEIGHT_SYNC_PORT);
      // Free: the trainer can bind it.
      await new Promise<void>((res, rej) => {
        const s = createServer();
        s.once('error', rej);
        s.listen(port, '127.0.0.1', () => s.close(() => res()));
      });
    }
  });
});
