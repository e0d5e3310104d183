import { describe, expect, it } from 'vitest';
import { makeEvent } from '@rstar/contracts';
import { createLogger } from '@rstar/telemetry';
import { connectRuntime, RuntimeConfigError } from './runtime';

const quiet = createLogger('test', { write: () => {} });

describe('connectRuntime', () => {
  it('standalone: PGlite + in-process bus + archiver; every published event lands in the store once', async () => {
    const rt = await connectRuntime({ natsUrl: '', databaseUrl: '', logger: quiet });
    try {
      expect(rt.mode).toBe('standalone');
      expect(rt.databaseUrl).toMatch(/^postgres:\/\/postgres@127\.0\.0\.1:\d+\/postgres$/);
      const events = Array.from({ length: 300 }, (_, i) =>
        makeEvent('RunFailed', { runId: 'rt', streamId: 'run-rt', key: `rt:${i}`, producer: 't', data: { error: String(i) } }),
      );
      await rt.bus.publish(events);
      await rt.bus.publish(events.slice(0, 100));
      await rt.flush();
      expect(await rt.store.count('rt')).toBe(300);
      const s = await rt.store.readStream('run-rt', { limit: 1000 });
      expect(s.map((e) => e.streamPosition)).toEqual(s.map((_, i) => i + 1));
    } finally {
      await rt.close();
    }
  });

  it('refuses a NATS URL without a database URL, naming the setting', async () => {
    await expect(connectRuntime({ natsUrl: 'nats://127.0.0.1:4222', databaseUrl: '', logger: quiet })).rejects.toBeInstanceOf(RuntimeConfigError);
  });
});
