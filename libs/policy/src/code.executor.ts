import type { ExecResult } from '@rstar/agent';
import type { SandboxPool } from '@rstar/sandbox';

/** Runs one Python program: what SFT trace building and the held-out evaluation need from a sandbox. */
export type CodeExecutor = (req: { code: string; input?: string }) => Promise<ExecResult>;

/**
 * A {@link CodeExecutor} over the isolated `SandboxPool` (docs/design/protocol.md §3 limits). POLICY-NOTES: a half-trained
 * model writes unbounded programs (`pow(47, 241111111)`), so its tool calls always run in the sandbox.
 */
export function sandboxExecutor(pool: SandboxPool, limits: { timeoutMs?: number; memoryMb?: number } = {}): CodeExecutor {
  return (req) => pool.execute({ code: req.code, input: req.input ?? '', ...limits });
}
