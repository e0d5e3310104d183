import type { EventType, RstarEvent } from '@rstar/contracts';
import type { ResamplingEventSource } from './resampling.handler';

/** The part of the event archive the resampler's restart needs (EventStore satisfies it). */
export interface RunArchive<P = unknown> {
  listRuns(opts?: { limit?: number }): Promise<Array<{ runId: string; status: 'running' | 'completed' | 'failed' }>>;
  readRun(runId: string, opts: { after?: P; limit?: number; types?: readonly EventType[] }): Promise<{ events: RstarEvent[]; last: P }>;
}

async function readAllOfRun<P>(archive: RunArchive<P>, runId: string, types: readonly EventType[]): Promise<RstarEvent[]> {
  const out: RstarEvent[] = [];
  let after: P | undefined;
  for (;;) {
    const page = await archive.readRun(runId, { after, limit: 1000, types });
    out.push(...page.events);
    if (page.events.length < 1000) return out;
    after = page.last;
  }
}

/**
 * The resampling service's restart source: the events of the runs still running (a finished run has no
 * open group), each read with the archive's per-run index — never a scan of the whole log.
 * `maxRuns` bounds how many recent runs are looked at (default 1000).
 */
export function openRunsSource<P>(archive: RunArchive<P>, maxRuns = 1000): ResamplingEventSource {
  return {
    async readEvents(types) {
      const runs = (await archive.listRuns({ limit: maxRuns })).filter((r) => r.status === 'running');
      const out: RstarEvent[] = [];
      for (const r of runs) out.push(...(await readAllOfRun(archive, r.runId, types)));
      return out;
    },
  };
}
