import { ids, makeEvent, type RstarEvent } from '@rstar/contracts';

/**
 * The bench's events [from, n) of one run: ToolCallCompleted of ~1 KB (560 bytes of stdout), spread over
 * 512 x 32 rollouts, published as `producer` (a signing bench publishes as tool-execution, whose role may).
 */
export function makeEvents(runId: string, n: number, from = 0, producer = 'bench'): RstarEvent[] {
  const stdout = 'x'.repeat(560);
  return Array.from({ length: n - from }, (_, k) => {
    const i = from + k;
    const rollout = ids.rollout(runId, 0, i % 512, Math.floor(i / 512) % 32);
    return makeEvent('ToolCallCompleted', {
      runId,
      streamId: `rollout-${rollout}`,
      key: `${rollout}:${i}`,
      producer,
      data: {
        callId: ids.toolCall(rollout, i, 0),
        rolloutId: rollout,
        turn: i % 10,
        status: 'ok',
        stdout,
        stderr: '',
        exitCode: 0,
        signal: null,
        wallMs: 12.5,
        cpuMs: 10.1,
        truncated: false,
      },
    });
  });
}
