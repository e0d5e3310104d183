import { describe, expect, it } from 'vitest';
import { makeEvent } from './codec';
import { toolCallCompletedData } from './tool-call.data';

const result = { status: 'ok' as const, stdout: '4\n', stderr: '', exitCode: 0, signal: null, wallMs: 12.5, cpuMs: 9, truncated: false };

describe('toolCallCompletedData: a sandbox result as ToolCallCompleted data', () => {
  it('copies the result, defaults sessionReset to false and leaves sessionKept out without a session', () => {
    const d = toolCallCompletedData({ callId: 'c', rolloutId: 'r', turn: 2 }, { ...result, extra: 'ignored' } as typeof result);
    expect(d).toEqual({ callId: 'c', rolloutId: 'r', turn: 2, ...result, sessionReset: false });
    expect('sessionKept' in d).toBe(false);
    // It is valid event data as it stands.
    expect(makeEvent('ToolCallCompleted', { runId: 'x', streamId: 'rollout-r', key: 'c', producer: 't', data: d }).data).toEqual(d);
  });

  it("keeps a session's reset and kept flags", () => {
    expect(toolCallCompletedData({ callId: 'c', rolloutId: 'r', turn: 0 }, { ...result, status: 'timeout', sessionReset: true, sessionKept: false })).toMatchObject({ status: 'timeout', sessionReset: true, sessionKept: false });
  });
});
