/**
 * @rstar/replay: rebuild, re-check and re-run any rollout or step of a recorded run from its events
 * (docs/design/architecture.md §1 "debug"). Pure projections and verification over a list of events; I/O
 * (event store, sandbox, bus) is injected by the caller (`rstar replay`).
 */
export * from './errors';
export * from './run.index';
export * from './run-summary.projection';
export * from './step-table.projection';
export * from './rollout-versions.projection';
export * from './group-table.projection';
export * from './rollout-transcript.projection';
export * from './reward.regrader';
export * from './tool-output.classifier';
export * from './run.verifier';
export * from './rollout.resume';
export * from './step.rerun';
export * from './history.jsonl';
export * from './replay.formatter';
export * from './rerun.comparison';
export * from './archive.integrity';
