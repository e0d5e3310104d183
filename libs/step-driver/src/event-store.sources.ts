import type { EventType, RstarEvent } from '@rstar/contracts';
import type { EventStore } from '@rstar/event-store';
import type { RunEventSource } from './driver';
import type { ResamplingEventSource } from '@rstar/groups';

/** Every archived event of a run (optionally only some types), in log order: a snapshot of what is committed now. */
export async function readRunEvents(store: EventStore, runId: string, types?: readonly EventType[]): Promise<RstarEvent[]> {
  return store.readRunSnapshot(runId, { types });
}

/** The optimization service's resume source over the event store. */
export function runEventSource(store: EventStore): RunEventSource {
  return { readRun: (runId) => readRunEvents(store, runId) };
}

/** The resampler's restart source over the event store, scoped to one run. */
export function resamplingEventSource(store: EventStore, runId: string): ResamplingEventSource {
  return { readEvents: (types) => readRunEvents(store, runId, types) };
}
