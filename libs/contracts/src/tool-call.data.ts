import type { EventData } from './events';

/**
 * What the sandbox answered for one call, as `ToolCallCompleted` records it: structurally the
 * `ExecResult` of @rstar/sandbox (contracts imports nothing of ours, so the shape is restated here and
 * the compiler checks that an `ExecResult` fits it where the two meet).
 */
export type ToolCallOutcome = Pick<EventData<'ToolCallCompleted'>, 'status' | 'stdout' | 'stderr' | 'exitCode' | 'signal' | 'wallMs' | 'cpuMs' | 'truncated'> & {
  sessionReset?: boolean;
  sessionKept?: boolean;
};

/**
 * The data of the `ToolCallCompleted` event of call `call` that ended with `r`: the one mapping from a
 * sandbox result to the event (tool-execution's handler and the synthetic run generator both use it).
 * `sessionReset` defaults to false; `sessionKept` is left out when the call had no session.
 */
export function toolCallCompletedData(call: { callId: string; rolloutId: string; turn: number }, r: ToolCallOutcome): EventData<'ToolCallCompleted'> {
  return {
    callId: call.callId,
    rolloutId: call.rolloutId,
    turn: call.turn,
    status: r.status,
    stdout: r.stdout,
    stderr: r.stderr,
    exitCode: r.exitCode,
    signal: r.signal,
    wallMs: r.wallMs,
    cpuMs: r.cpuMs,
    truncated: r.truncated,
    sessionReset: r.sessionReset ?? false,
    ...(r.sessionKept === undefined ? {} : { sessionKept: r.sessionKept }),
  };
}
