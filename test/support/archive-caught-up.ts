import type { EventStore } from '@rstar/event-store';
import type { JetStreamBus } from '@rstar/messaging';
import { until } from '@rstar/testing';

/**
 * Waits until the Postgres archive holds exactly as many events as the JetStream stream stored, and resolves
 * with that count. The archiver is its own durable consumer, so a run can end on the bus (the CLI sees
 * `RunCompleted`) before every event of it is archived; a test that reads the archive right after a run
 * must wait for this, or it reads a prefix. `messages` is the stream's stored-message count (undefined while
 * the broker cannot answer, e.g. during a failover); the default asks `bus` for its own stream.
 * Rejects (a `until` timeout naming what it waited for) after `timeoutMs`.
 */
export async function archiveCaughtUp(
  store: EventStore,
  messages: JetStreamBus | (() => Promise<number | undefined>),
  timeoutMs = 90_000,
): Promise<number> {
  const stored = typeof messages === 'function' ? messages : async () => (await messages.jsm.streams.info(messages.stream)).state.messages;
  return until(async () => {
    const [inStream, archived] = [await stored(), await store.count()];
    return inStream !== undefined && inStream === archived ? archived : undefined;
  }, 'the archive to hold every message of the stream', { timeoutMs, everyMs: 200 });
}
