export { extractAnswer } from './answer.extractor';
export { grade, gradeAsync, warmUp, type Verdict, type GradeOptions, type GradeAsyncOptions } from './grade';
export { normalizeLatex, type NormalizedAnswer } from './latex.normalizer';
export { GraderError, type GraderErrorCode } from './errors';
export type { SymbolicBackend, SymbolicResult } from './symbolic.port';
export { toSympy } from './sympy.serializer';
export { SympySandboxBackend, type CodeExecutor } from './sympy.backend';
export {
  agreementBySource,
  goldToString,
  gradeTrajectoryAnswer,
  readHandVerdicts,
  readTrajectoryAnswers,
  responseOf,
  DEFAULT_TRAJECTORIES_DIR,
  SHARED_DIR,
  type HandVerdict,
  type SourceAgreement,
  type TrajectoryAnswer,
} from './trajectory.agreement';
export { problemHints, type ProblemHints } from './problem.hints';
export { plainTextToLatex } from './plain-text.converter';
export { gradeJsonLine, type GradeLineOptions, type GradeLineResult } from './grade-lines';
