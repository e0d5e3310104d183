export { extractAnswer } from './answer.extractor';
export { grade, gradeAsync, warmUp, type Verdict, type GradeOptions, type GradeAsyncOptions } from './grade';
export { normalizeLatex, type NormalizedAnswer } from './latex.normalizer';
export { GraderError, type GraderErrorCode } from './errors';
export type { SymbolicBackend, SymbolicResult } from './symbolic.port';
export { toSympy } from './sympy.serializer';
export { SympySandboxBackend, type CodeExecutor } from './sympy.backend';
export {
  compareWithRecordedVerdicts,
  gradeFinalAnswer,
  goldToString,
  DEFAULT_TRAJECTORIES_DIR,
  type FileAgreement,
  type Disagreement,
} from './trajectory.agreement';
export { gradeJsonLine, type GradeLineResult } from './grade-lines';
