/**
 * @rstar/trackers: optional sinks of a run's metrics in the experiment trackers people already use —
 * MLflow (REST API) and Weights & Biases (offline, syncable later) — fed from the run's events.
 */
export * from './tracker.port';
export * from './mlflow.tracker';
export * from './wandb-offline.tracker';
export * from './tracker.feed';
export * from './trackers.factory';
