import { resolve } from 'node:path';
import type { RunConfig } from '@rstar/contracts';
import { MlflowTracker } from './mlflow.tracker';
import type { TrackerSink } from './tracker.port';
import { WandbOfflineTracker } from './wandb-offline.tracker';

/**
 * The sinks a run config asks for (`trackers.mlflow`, `trackers.wandb`); none when the section is absent.
 * A relative `wandb.dir` is resolved against `baseDir` (the run folder).
 */
export function trackersOf(config: RunConfig, baseDir: string): TrackerSink[] {
  const t = config.trackers;
  if (!t) return [];
  const out: TrackerSink[] = [];
  if (t.mlflow) out.push(new MlflowTracker({ trackingUri: t.mlflow.trackingUri, experiment: t.mlflow.experiment }));
  if (t.wandb) out.push(new WandbOfflineTracker({ project: t.wandb.project, dir: resolve(baseDir, t.wandb.dir), python: t.wandb.python }));
  return out;
}
