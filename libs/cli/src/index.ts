/**
 * @rstar/cli: the `rstar` command's library surface — standalone training (`runTraining`), distributed
 * run start (`launchDistributedRun`, used by the optimization service), evaluation, ablation, reports.
 */
export { runTraining, RunRefusedError, type TrainingOptions, type TrainingResult, type TrainProgress, type StepRecord } from './train/training.run';
export { launchDistributedRun, type LaunchDeps } from './train/distributed-run.launcher';
export { RunStartConsumer } from './train/run-start.consumer';
export { submitRemoteRun, RemoteRunFailedError, type RemoteSubmitOptions } from './train/remote.submit';
export { evaluatePassAt1, poolToolExecutor, type PassAt1Options, type PassAt1Report } from './train/pass-at-1.evaluator';
export { evaluateCheckpoint, type CheckpointEvalOptions } from './train/checkpoint.evaluator';
export { runRocAblation, type AblationArm, type AblationResult } from './train/roc.ablation';
export { rebuildStepBatch, BatchRebuildError } from './train/batch.rebuild';
export { loadRunConfig, presetNames, resolveDataPath, ConfigNotFoundError, REPO_ROOT } from './train/run-config.loader';
export { runPrompts, readJsonlDataset, taskPrompts, ListPromptSource, DatasetError } from './train/prompt.sources';
export { readRunEvents, runEventSource, resamplingEventSource } from './train/event-store.sources';
export { StagedBuiltinTrainer } from './train/staged.trainer';
export { writeRunReport, metricsCsv } from './report/run.report';
export { lineChartSvg, type PlotSeries } from './report/svg.plot';
