import { InvalidRolloutRequestError } from './agent.errors';
import type { ExecResult } from './ports';

/** Limits on the tool-response text (docs/design/protocol.md §3); lengths in Unicode code points. */
export interface ToolResponseLimits {
  /** Cap per stream before formatting (the service's cap; applied again here so any executor is safe). Default 1000. */
  streamMaxChars: number;
  /** Cap of the whole text shown to the model. Default 256. */
  maxChars: number;
  /** Kept from the start when cut. Default 128. */
  headChars: number;
  /** Kept from the end when cut. Default 128. */
  tailChars: number;
}

export const DEFAULT_TOOL_RESPONSE_LIMITS: ToolResponseLimits = { streamMaxChars: 1000, maxChars: 256, headChars: 128, tailChars: 128 };

export const TRUNCATION_MARKER = '...(truncated)...';

/** Validate and complete partial limits; throws {@link InvalidRolloutRequestError} naming the field. */
export function resolveToolResponseLimits(partial: Partial<ToolResponseLimits> = {}): ToolResponseLimits {
  const l = { ...DEFAULT_TOOL_RESPONSE_LIMITS, ...partial };
  for (const k of Object.keys(l) as (keyof ToolResponseLimits)[]) {
    if (!Number.isInteger(l[k]) || l[k] < 0) throw new InvalidRolloutRequestError(`${k} must be a non-negative integer, got ${l[k]}`, k);
  }
  if (l.headChars + l.tailChars > l.maxChars) {
    throw new InvalidRolloutRequestError(`headChars + tailChars (${l.headChars + l.tailChars}) must not exceed maxChars (${l.maxChars})`, 'headChars');
  }
  return l;
}

/**
 * Cut `text` to `maxChars` code points keeping the middle out: `first head + "...(truncated)..." +
 * last tail` (docs/design/protocol.md §3). Text within the limit is returned unchanged. Counts code points, so a
 * non-ASCII character (or a surrogate pair) is never split.
 */
export function truncateMiddle(text: string, maxChars: number, head: number, tail: number): string {
  const cps = Array.from(text);
  if (cps.length <= maxChars) return text;
  return cps.slice(0, head).join('') + TRUNCATION_MARKER + (tail > 0 ? cps.slice(cps.length - tail).join('') : '');
}

function capHead(text: string, max: number): string {
  const cps = Array.from(text);
  return cps.length <= max ? text : cps.slice(0, max).join('');
}

/**
 * The tool-response text of an execution result (docs/design/protocol.md §3 table): on success `stdout:`, `stderr:`
 * and `execution time:` lines; on failure a leading `reason: <status>` line (omitted for an ordinary
 * runtime error). Empty streams are omitted; each stream is capped to `streamMaxChars`, then the whole
 * text is cut to `maxChars` keeping head and tail.
 */
export function formatToolResponse(result: ExecResult, limits: ToolResponseLimits = DEFAULT_TOOL_RESPONSE_LIMITS): string {
  const lines: string[] = [];
  if (result.status !== 'ok' && result.status !== 'runtime_error') lines.push(`reason: ${result.status}`);
  const stdout = capHead(result.stdout, limits.streamMaxChars).trimEnd();
  const stderr = capHead(result.stderr, limits.streamMaxChars).trimEnd();
  if (stdout !== '') lines.push(`stdout: ${stdout}`);
  if (stderr !== '') lines.push(`stderr: ${stderr}`);
  lines.push(`execution time: ${(result.wallMs / 1000).toFixed(2)}s`);
  return truncateMiddle(lines.join('\n'), limits.maxChars, limits.headChars, limits.tailChars);
}

/** A call is erroneous when its status is not `ok` (docs/design/protocol.md §3); decode failures are counted by the caller. */
export function isErroneous(result: ExecResult): boolean {
  return result.status !== 'ok';
}
