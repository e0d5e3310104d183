import { Inject, Injectable } from '@nestjs/common';
import { ConfigService } from '@nestjs/config';
import { ModelTokenizer } from '@rstar/agent';
import { createEngines, DEFAULT_RETRY, EnginePool, runEngineSpecs, type RunEngine } from '@rstar/engines';
import { BackgroundWorker, BusConnection, ReadinessRegistry, SECURITY_SETTINGS, type Stoppable } from '@rstar/nest-runtime';
import type { SecuritySettings } from '@rstar/security';
import { Tokenizer } from '@rstar/policy';
import { PolicyServingHandler, checkEngineTokenizers, type RunPoolFactory } from '@rstar/rollouts';
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
    @Inject(SECURITY_SETTINGS) private readonly security: SecuritySettings,
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

  /** The engine pool rollouts run on now, once created (the `/v1/engines` route): the current run's, else RSTAR_ENGINES'. */
  get enginePool(): EnginePool | null {
    return this.handler?.enginePool ?? this.pool;
  }

  protected details(): Record<string, unknown> {
    return this.handler ? { policyVersion: this.handler.policyVersion, activeRollouts: this.handler.activeRollouts, durables: this.handler.durables } : {};
  }

  protected async launch(): Promise<Stoppable> {
    const bus = await this.bus.ready();
    const cfg = this.cfg;
    const envEngines = cfg.get('RSTAR_ENGINES', { infer: true });
    const envScheduler = cfg.get('RSTAR_SCHEDULER', { infer: true });
    const adapters = createEngines(envEngines, DEFAULT_RETRY, { apiKey: this.security.engineApiKey });
    const compact = cfg.get('RSTAR_COMPACT_PROMPT', { infer: true });
    const tokenizerDir = cfg.get('RSTAR_TOKENIZER_DIR', { infer: true });
    // A model's own tokenizer must be the one every engine serves (the engines report its hash).
    const model = tokenizerDir ? ModelTokenizer.load(tokenizerDir, 'RSTAR_TOKENIZER_DIR') : null;
    if (model) await checkEngineTokenizers(model.hash, adapters);
    const onEngineState = (id: string, up: boolean, reason: string) => this.log.warn(up ? 'engine back in rotation' : 'engine out of rotation', { engineId: id, reason });
    const pool = await EnginePool.create(adapters, envScheduler, { onEngineState });
    // A run's config names its engines and scheduler (each rollout request carries them); RSTAR_ENGINES and
    // RSTAR_SCHEDULER fill only what it leaves out.
    const specsOf = (engines: RunEngine[] | undefined) => (engines ? runEngineSpecs(engines, envEngines) : envEngines);
    const runPools: RunPoolFactory = {
      keyOf: (engines, scheduler) => JSON.stringify([specsOf(engines), scheduler ?? envScheduler]),
      create: async (engines, scheduler) => {
        const runAdapters = createEngines(specsOf(engines), DEFAULT_RETRY, { apiKey: this.security.engineApiKey });
        if (model) await checkEngineTokenizers(model.hash, runAdapters);
        return EnginePool.create(runAdapters, scheduler ?? envScheduler, { onEngineState });
      },
    };
    const handler = new PolicyServingHandler(bus, {
      pool,
      runPools,
      tokenizer: model ?? new Tokenizer(),
      tokenizerHash: model?.hash,
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
