/** Verdict of a symbolic backend on `pred == gold`. */
export type SymbolicResult = 'equal' | 'different' | 'unknown';

/**
 * Port for equality checks that can hang (huge powers, hard simplifications): rStar2 offloads them to
 * its code service. `pred` and `gold` are sympy expression strings (see `toSympy`). Implementations
 * must resolve within about `timeoutMs`; the grader also bounds the wait and records rule `timeout`.
 */
export interface SymbolicBackend {
  check(pred: string, gold: string, timeoutMs: number): Promise<SymbolicResult>;
}
