/**
 * @rstar/sandbox: the isolated Python execution pool behind the code tool (docs/design/architecture.md §5,
 * docs/design/protocol.md §3). Main type: {@link SandboxPool}. The tool-response text lives in @rstar/agent.
 */
export { SandboxPool, poolResult, SCIPY_WARM_MODULES } from './sandbox.pool';
export { bwrapUsable } from './bwrap.args';
export { scipySubmoduleUsage } from './scipy.usage';
export type {
  ExecRequest,
  ExecResult,
  ExecStatus,
  ExecLimits,
  IsolationMode,
  SandboxHealth,
  SandboxPoolOptions,
} from './sandbox.types';
export { DEFAULT_LIMITS, DEFAULT_MAXIMA, MIN_MEMORY_MB, resolveRequest, type ResolvedRequest } from './exec-request.validator';
export { resolvePython, REPO_ROOT } from './python.resolver';
export { memoryKillNote } from './zygote.response';
export {
  INVALID_REQUEST_PREFIX,
  SandboxError,
  InvalidRequestError,
  PoolNotRunningError,
  IsolationUnavailableError,
  WorkerStartError,
  ZygoteProtocolError,
  SandboxDataNotFoundError,
} from './sandbox.errors';
export {
  loadTrajectories,
  compareBlock,
  normaliseOutput,
  renderAsSource,
  DEFAULT_TRAJECTORY_DIR,
  AGREEING,
  type RecordedTrajectory,
  type ReplayKind,
  replayTrajectories,
  type ReplayReport,
  type ReplayExecutor,
} from './trajectory.replay';
export { runExecLines, parseExecLine, HttpExecutor, type Executor, type ExecLine, type ExecRunSummary } from './exec-lines.runner';
export * from './compat';
