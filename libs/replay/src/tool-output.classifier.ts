/** What a tool call produced, as recorded or as re-executed. */
export interface ToolOutput {
  status: string;
  stdout: string;
  stderr: string;
  truncated: boolean;
}

/**
 * Why a re-executed tool call differs from the recording:
 * - `timing_dependent`: the outcome depends on load or on the clock/randomness (timeouts, kills, an
 *   overloaded pool, a program that reads the time or an unseeded RNG, memory addresses in reprs);
 * - `library_version`: the program behaves differently under today's Python libraries (import or
 *   attribute errors, deprecation warnings, floats that differ only in their last digits);
 * - `real_change`: anything else: the sandbox or the tool semantics changed.
 */
export type ToolDiffCause = 'timing_dependent' | 'library_version' | 'real_change';

/** A classified difference between a recorded and a re-executed tool output. */
export interface ToolOutputDiff {
  cause: ToolDiffCause;
  /** Fields that differ, among status, stdout, stderr, truncated. */
  fields: Array<keyof ToolOutput>;
  /** Deterministic differences fail `verify`; timing-dependent ones are reported only. */
  deterministic: boolean;
  /** One line on why this cause was chosen. */
  reason: string;
  /** The first differing position of the first differing text field, with context. */
  excerpt: { field: keyof ToolOutput; at: number; recorded: string; replayed: string } | null;
}

const LOAD_STATUSES = new Set(['timeout', 'killed', 'overloaded', 'sandbox_error']);
// Sources of non-reproducible output a program can read.
const NONDETERMINISTIC_CODE =
  /\b(import\s+(time|random|uuid|secrets|datetime)|from\s+(time|random|uuid|secrets|datetime)\s+import|time\.(time|perf_counter|monotonic|process_time)|datetime\.now|os\.getpid|os\.urandom|np\.random\.(rand|randn|randint|random|choice|shuffle|permutation)\b)/;
const LIBRARY_SIGNS = /(ModuleNotFoundError|ImportError|has no attribute|DeprecationWarning|FutureWarning|unexpected keyword argument|VisibleDeprecationWarning)/;
const ADDRESS = /0x[0-9a-fA-F]{6,}/g;
const FLOAT = /-?\d+\.\d+(?:[eE][-+]?\d+)?/g;

const maskAddresses = (s: string): string => s.replace(ADDRESS, '0x?');
/** Floats rounded to 9 significant digits: last-digit drift between BLAS/libm versions disappears. */
const roundFloats = (s: string): string => s.replace(FLOAT, (m) => Number(Number(m).toPrecision(9)).toString());

function excerpt(field: keyof ToolOutput, a: string, b: string): ToolOutputDiff['excerpt'] {
  let i = 0;
  while (i < a.length && i < b.length && a[i] === b[i]) i++;
  const from = Math.max(0, i - 30);
  return { field, at: i, recorded: a.slice(from, i + 50), replayed: b.slice(from, i + 50) };
}

/**
 * Compare a recorded tool output with a re-execution of the same call and classify the difference
 * (see {@link ToolDiffCause}); null when they are equal. Timings (wall, CPU) are never compared.
 */
export function classifyToolOutputDiff(code: string, recorded: ToolOutput, replayed: ToolOutput): ToolOutputDiff | null {
  const fields = (['status', 'stdout', 'stderr', 'truncated'] as const).filter((f) => recorded[f] !== replayed[f]);
  if (fields.length === 0) return null;
  const textField = fields.find((f) => f === 'stdout' || f === 'stderr') ?? null;
  const ex = textField ? excerpt(textField, recorded[textField] as string, replayed[textField] as string) : null;
  const out = (cause: ToolDiffCause, reason: string): ToolOutputDiff => ({ cause, fields: [...fields], deterministic: cause !== 'timing_dependent', reason, excerpt: ex });
  if (LOAD_STATUSES.has(recorded.status) || LOAD_STATUSES.has(replayed.status)) {
    return out('timing_dependent', `status ${recorded.status} -> ${replayed.status}: depends on machine load and limits`);
  }
  if (NONDETERMINISTIC_CODE.test(code)) return out('timing_dependent', 'the program reads the clock, the pid or an unseeded RNG');
  const same = (f: (s: string) => string) => f(recorded.stdout) === f(replayed.stdout) && f(recorded.stderr) === f(replayed.stderr) && recorded.status === replayed.status;
  if (same(maskAddresses)) return out('timing_dependent', 'outputs differ only in memory addresses');
  const signOld = LIBRARY_SIGNS.exec(recorded.stderr);
  const signNew = LIBRARY_SIGNS.exec(replayed.stderr);
  if (!signOld !== !signNew) {
    return out('library_version', `an import, attribute or deprecation message appears on one side only: ${(signOld ?? signNew)![1]}`);
  }
  if (same((s) => roundFloats(maskAddresses(s)))) return out('library_version', 'floats differ only beyond 9 significant digits (numeric library build)');
  return out('real_change', `${fields.join(', ')} differ`);
}
