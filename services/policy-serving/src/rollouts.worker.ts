import { Injectable } from '@nestjs/common';
import { ConfigService } from '@nestjs/config';
import { createEngines, EnginePool } from '@rstar/engines';
import { BackgroundWorker, BusConnection, ReadinessRegistry, type Stoppable } from '@rstar/nest-runtime';
import { Tokenizer } from '@rstar/policy';
import { PolicyServingHandler } from '@rstar/rollouts';
import type { PolicyServingEnv } from './policy-serving.config';

/**
 * The rollout handler (`RolloutRequested` -> turns, tool calls -> `RolloutCompleted`, weight reloads on
 * `PolicyUpdated`), once NATS is up and every engine has answered its server info (an engine that is
 * late is waited for: the launch is retried until it answers).
 */
@Injectable()
export class RolloutsWorker extends BackgroundWorker {
  private handler: PolicyServingHandler | null = null;
  private pool: EnginePool | null = null;

  constructor(
    private readonly bus: BusConnection,
    private readonly cfg: ConfigService<PolicyServingEnv, true>,
    registry: ReadinessRegistry,
  ) {
    super('rollouts', registry);
    registry.register({
      name: 'engines',
      probe: () => {
        const engines = this.pool?.scheduler.snapshot() ?? [];
        return { ready: engines.some((e) => e.up), details: { engines: engines.map((e) => ({ id: e.id, up: e.up })) } };
      },
    });
  }

  /** The engine pool once created (the `/v1/engines` route). */
  get enginePool(): EnginePool | null {
    return this.pool;
  }

  protected details(): Record<string, unknown> {
    return this.handler ? { policyVersion: this.handler.policyVersion, activeRollouts: this.handler.activeRollouts, durables: this.handler.durables } : {};
  }

  protected async launch(): Promise<Stoppable> {
    const bus = await this.bus.ready();
    const cfg = this.cfg;
    const adapters = createEngines(cfg.get('RSTAR_ENGINES', { infer: true }));
    const compact = cfg.get('RSTAR_COMPACT_PROMPT', { infer: true });
    const pool = await EnginePool.create(adapters, cfg.get('RSTAR_SCHEDULER', { infer: true }), {
      onEngineState: (id, up, reason) => this.log.warn(up ? 'engine back in rotation' : 'engine out of rotation', { engineId: id, reason }),
    });
    const handler = new PolicyServingHandler(bus, {
      pool,
      tokenizer: new Tokenizer(),
      // The built-in tiny policy's context cannot hold the system turn; it was trained without it.
      compactPrompt: compact === 'auto' ? adapters.every((a) => a.kind === 'builtin') : compact === '1',
      concurrency: cfg.get('RSTAR_ROLLOUT_CONCURRENCY', { infer: true }),
      initialPolicyVersion: cfg.get('RSTAR_POLICY_VERSION', { infer: true }),
      instanceId: cfg.get('RSTAR_INSTANCE_ID', { infer: true }),
      ackWaitMs: cfg.get('RSTAR_ACK_WAIT_MS', { infer: true }),
    });
    try {
      await handler.start();
    } catch (e) {
      pool.close();
      throw e;
    }
    this.pool = pool;
    this.handler = handler;
    return {
      stop: async () => {
        await handler.stop();
        pool.close();
      },
    };
  }
}
