import { makeEvent, streams, type RstarEvent } from '@rstar/contracts';
import type { EventBus, Subscription } from '@rstar/messaging';
import type { SandboxPool } from '@rstar/sandbox';

/**
 * tool-execution's bus flow for standalone runs: `ToolCallRequested` -> the sandbox pool ->
 * `ToolCallCompleted` (id `ToolCallCompleted:<callId>`, so a redelivered request re-emits the same event
 * and the bus drops the copy). Used by `rstar train` while services/tool-execution has no handler to
 * import; same events, same ids.
 */
export class SandboxToolHandler {
  private sub: Subscription | null = null;

  constructor(
    private readonly bus: EventBus,
    private readonly pool: SandboxPool,
    private readonly opts: { outputChars?: number; concurrency?: number; durable?: string } = {},
  ) {}

  async start(): Promise<void> {
    this.sub = await this.bus.subscribe({
      durable: this.opts.durable ?? 'tool-execution',
      types: ['ToolCallRequested'],
      concurrency: this.opts.concurrency ?? 32,
      handler: async (ev) => this.onRequested(ev),
    });
  }

  async stop(): Promise<void> {
    await this.sub?.drain();
    this.sub = null;
  }

  private async onRequested(ev: RstarEvent<'ToolCallRequested'>): Promise<void> {
    const d = ev.data;
    const r = await this.pool.execute({
      code: d.code, input: d.input, timeoutMs: d.limits.timeoutMs, memoryMb: d.limits.memoryMb,
      session: d.session ?? undefined, outputChars: this.opts.outputChars,
    });
    await this.bus.publish(
      makeEvent('ToolCallCompleted', {
        runId: ev.runId, streamId: streams.rollout(d.rolloutId), key: d.callId, producer: 'tool-execution', causedBy: ev,
        data: {
          callId: d.callId, rolloutId: d.rolloutId, turn: d.turn, status: r.status, stdout: r.stdout, stderr: r.stderr,
          exitCode: r.exitCode, signal: r.signal, wallMs: r.wallMs, cpuMs: r.cpuMs, truncated: r.truncated,
        },
      }),
    );
  }
}
