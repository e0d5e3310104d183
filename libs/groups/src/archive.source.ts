import type { EventType, RstarEvent } from '@rstar/contracts';
import type { ResamplingEventSource } from './resampling.handler';

/** The part of the event archive the resampler's restart needs (EventStore satisfies it). */
export interface RunArchive {
  /** Runs with their status (used when {@link OpenRunsOptions.runs} is not given). */
  listRuns(opts?: { limit?: number }): Promise<Array<{ runId: string; status: 'running' | 'completed' | 'failed' }>>;
  /** Every committed event of the run of `types`, in log order (not held back by transactions in flight elsewhere). */
  readRunSnapshot(runId: string, opts: { types?: readonly EventType[] }): Promise<RstarEvent[]>;
}

async function readAllOfRun(archive: RunArchive, runId: string, types: readonly EventType[]): Promise<RstarEvent[]> {
  return archive.readRunSnapshot(runId, { types });
}

/** Options of {@link openRunsSource}. */
export interface OpenRunsOptions {
  /**
   * The runs that may have open groups, from a query (the read models' `runs` table plus the runs with
   * events not projected yet: `ReadModels.openRunIds`). Without it the archive's run list is used, which
   * groups every event by run.
   */
  runs?: () => Promise<string[]>;
  /** Most recent runs looked at when `runs` is not given (default 1000). */
  maxRuns?: number;
}

/**
 * The resampling service's restart source: the events of the runs still running (a finished run has no
 * open group), each read with the archive's per-run index — one query per run, never a scan of the log.
 */
export function openRunsSource(archive: RunArchive, opts: OpenRunsOptions = {}): ResamplingEventSource {
  return {
    async readEvents(types) {
      const runs = opts.runs
        ? await opts.runs()
        : (await archive.listRuns({ limit: opts.maxRuns ?? 1000 })).filter((r) => r.status === 'running').map((r) => r.runId);
      const out: RstarEvent[] = [];
      for (const runId of runs) out.push(...(await readAllOfRun(archive, runId, types)));
      return out;
    },
  };
}
