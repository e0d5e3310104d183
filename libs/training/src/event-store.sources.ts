import type { EventType, RstarEvent } from '@rstar/contracts';
import type { EventStore } from '@rstar/event-store';
import type { RunEventSource } from './driver';
import type { ResamplingEventSource } from '@rstar/groups';

/** Every archived event of a run (optionally only some types), in log order, read page by page. */
export async function readRunEvents(store: EventStore, runId: string, types?: readonly EventType[]): Promise<RstarEvent[]> {
  const out: RstarEvent[] = [];
  let after: Awaited<ReturnType<EventStore['readRun']>>['last'] | undefined;
  for (;;) {
    const page = await store.readRun(runId, { after, limit: 1000, types });
    out.push(...page.events);
    if (page.events.length < 1000) return out;
    after = page.last;
  }
}

/** The optimization service's resume source over the event store. */
export function runEventSource(store: EventStore): RunEventSource {
  return { readRun: (runId) => readRunEvents(store, runId) };
}

/** The resampler's restart source over the event store, scoped to one run. */
export function resamplingEventSource(store: EventStore, runId: string): ResamplingEventSource {
  return { readEvents: (types) => readRunEvents(store, runId, types) };
}
