import { GraderError } from './errors';
import type { SymbolicBackend, SymbolicResult } from './symbolic.port';

/** What the backend needs from a code executor: the shape of `SandboxPool.execute` (@rstar/sandbox). */
export interface CodeExecutor {
  execute(req: { code: string; input?: string; timeoutMs?: number }): Promise<{ status: string; stdout: string; stderr: string }>;
}

/**
 * Runs in the sandbox: reads `{pred, gold}` (sympy expression strings from `toSympy`) on stdin and
 * prints `equal`, `different` or `unknown` from sympy's `equals` (symbolic simplification, then
 * numeric testing at random points).
 */
const CHECK_PROGRAM = `
import sys, json
import sympy
from sympy import *
d = json.loads(sys.stdin.read())
ns = dict(vars(sympy))
p = eval(d["pred"], {"__builtins__": {}}, ns)
g = eval(d["gold"], {"__builtins__": {}}, ns)
r = sympy.simplify(p - g)
if r == 0:
    print("equal")
else:
    e = r.equals(0)
    print("equal" if e is True else "different" if e is False else "unknown")
`;

/**
 * {@link SymbolicBackend} on sympy in the sandbox (docs/design/grading.md rule 6: work that can hang runs under a
 * time limit, as rStar2 offloads verification to its code service). Pass a started `SandboxPool`.
 * Rejects with `GraderError('timeout')` when the sandbox kills the check at `timeoutMs`, and with
 * `GraderError('backend_failed')` when the program fails.
 */
export class SympySandboxBackend implements SymbolicBackend {
  constructor(private readonly executor: CodeExecutor) {}

  async check(pred: string, gold: string, timeoutMs: number): Promise<SymbolicResult> {
    const res = await this.executor.execute({ code: CHECK_PROGRAM, input: JSON.stringify({ pred, gold }), timeoutMs });
    if (res.status === 'timeout') throw new GraderError('timeout', `sympy check exceeded ${timeoutMs} ms`);
    if (res.status !== 'ok') throw new GraderError('backend_failed', `sympy check ended with ${res.status}: ${res.stderr.slice(-300)}`);
    const out = res.stdout.trim().split('\n').pop();
    if (out === 'equal' || out === 'different' || out === 'unknown') return out;
    throw new GraderError('backend_failed', `unexpected sympy output: ${res.stdout.slice(0, 200)}`);
  }
}
