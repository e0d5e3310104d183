import { makeEvent, type RstarEvent } from '@rstar/contracts';
import { InProcessBus } from '@rstar/messaging';
import { createLogger } from '@rstar/telemetry';
import { afterEach, describe, expect, it } from 'vitest';
import { BusToolExecutor } from './bus-tool.executor';

const quiet = createLogger('test', { write: () => undefined });
const req = (callId: string) => ({ callId, rolloutId: 'r1', turn: 0, tool: 'python', code: 'print(1)', input: '', session: null, timeoutMs: 1000, memoryMb: 128 });
const completed = (callId: string, stdout: string) =>
  makeEvent('ToolCallCompleted', {
    runId: 'run1', streamId: 'rollout-r1', key: callId, producer: 'test',
    data: { callId, rolloutId: 'r1', turn: 0, status: 'ok', stdout, stderr: '', exitCode: 0, signal: null, wallMs: 1, cpuMs: 1, truncated: false },
  }) as RstarEvent<'ToolCallCompleted'>;

describe('BusToolExecutor', () => {
  let bus: InProcessBus | undefined;
  afterEach(async () => bus?.close());

  it('gives a retried call the result an earlier attempt consumed, and a result that came before anyone waited', async () => {
    bus = new InProcessBus({ logger: quiet });
    const requested: string[] = [];
    await bus.subscribe({ durable: 'obs', types: ['ToolCallRequested'], handler: async (e) => void requested.push(e.id) });
    const tools = new BusToolExecutor(bus, { runId: 'run1', producer: 'test', causedBy: null }, { resultTimeoutMs: 600_000 });

    const first = tools.execute(req('call:r1:0:0'));
    await new Promise((r) => setImmediate(r));
    tools.complete(completed('call:r1:0:0', 'one\n'));
    expect((await first).stdout).toBe('one\n');
    // The attempt that consumed it failed; the retry re-requests the call (the bus drops the duplicate id).
    expect((await tools.execute(req('call:r1:0:0'))).stdout).toBe('one\n');

    // Redelivered to a restarted instance before its redo asks for it.
    tools.complete(completed('call:r1:1:0', 'two\n'));
    expect((await tools.execute(req('call:r1:1:0'))).stdout).toBe('two\n');
    expect(requested).toEqual(['ToolCallRequested:call:r1:0:0']);
  });

  it('forgets kept results after keepMs', async () => {
    bus = new InProcessBus({ logger: quiet });
    let now = 0;
    const tools = new BusToolExecutor(bus, { runId: 'run1', producer: 'test', causedBy: null }, { resultTimeoutMs: 50, keepMs: 1_000, clock: () => now });
    tools.complete(completed('call:r1:0:0', 'old\n'));
    now = 5_000;
    tools.complete(completed('call:r1:2:0', 'new\n'));
    await expect(tools.execute(req('call:r1:0:0'))).rejects.toMatchObject({ code: 'tool_result_timeout' });
  });
});
