import type { FactoryProvider, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { ConfigService } from '@nestjs/config';
import { ReadinessRegistry } from '@rstar/nest-runtime';
import { DEFAULT_MAXIMA, SandboxPool, type DropInDefaults } from '@rstar/sandbox';
import { ToolExecutionMetrics } from '@rstar/tool-calls';
import { createLogger } from '@rstar/telemetry';
import { DROP_IN_DEFAULTS, SANDBOX_POOL, TOOL_METRICS } from './tokens';
import type { ToolExecutionEnv } from './tool-execution.config';

/**
 * The sandbox pool as a provider: its zygotes start at module init (a local resource: a failure here,
 * e.g. no Python, ends the start with its message) and are torn down at shutdown, after the workers
 * that feed it stopped. Readiness reports the pool's health.
 */
export class SandboxPoolLifecycle implements OnModuleInit, OnApplicationShutdown {
  constructor(readonly pool: SandboxPool, registry: ReadinessRegistry) {
    registry.register({
      name: 'sandbox',
      probe: () => {
        const h = pool.health();
        return { ready: h.ok, details: { workers: h.workers, queueDepth: h.queueDepth, isolation: h.isolation, warnings: h.warnings } };
      },
    });
  }

  async onModuleInit(): Promise<void> {
    await this.pool.start();
  }

  async onApplicationShutdown(): Promise<void> {
    ToolExecutionMetrics.forget(this.pool);
    await this.pool.close();
  }
}

/** The defaults of the drop-in routes when a request names none (tool-execution.config.ts). */
export interface DropInRouteDefaults {
  /** SandboxFusion `/run_code`. */
  sandboxFusion: DropInDefaults;
  /** code-judge `/run`, `/run/batch`, `/run/long-batch`. */
  codeJudge: DropInDefaults;
}

/**
 * Providers of the pool ({@link SANDBOX_POOL}), its metrics ({@link TOOL_METRICS}) and the drop-in
 * routes' defaults ({@link DROP_IN_DEFAULTS}).
 */
export const sandboxProviders: FactoryProvider[] = [
  {
    provide: SandboxPoolLifecycle,
    inject: [ConfigService, ReadinessRegistry],
    useFactory: (cfg: ConfigService<ToolExecutionEnv, true>, registry: ReadinessRegistry) => {
      const log = createLogger('tool-execution');
      const maxTimeout = cfg.get('RSTAR_SANDBOX_MAX_TIMEOUT_MS', { infer: true });
      const pool = new SandboxPool({
        workers: cfg.get('RSTAR_SANDBOX_WORKERS', { infer: true }),
        python: cfg.get('RSTAR_PYTHON', { infer: true }),
        queueLimit: cfg.get('RSTAR_SANDBOX_QUEUE_LIMIT', { infer: true }),
        maxima: {
          ...(maxTimeout ? { timeoutMs: maxTimeout } : {}),
          // The drop-in routes may keep more per stream than the pool's own maximum: not clamped below it.
          outputChars: Math.max(DEFAULT_MAXIMA.outputChars, cfg.get('RSTAR_DROP_IN_OUTPUT_CHARS', { infer: true })),
        },
        onWarning: (m) => log.warn(m),
      });
      return new SandboxPoolLifecycle(pool, registry);
    },
  },
  { provide: SANDBOX_POOL, inject: [SandboxPoolLifecycle], useFactory: (l: SandboxPoolLifecycle) => l.pool },
  { provide: TOOL_METRICS, inject: [SANDBOX_POOL], useFactory: (pool: SandboxPool) => new ToolExecutionMetrics(pool) },
  {
    provide: DROP_IN_DEFAULTS,
    inject: [ConfigService],
    useFactory: (cfg: ConfigService<ToolExecutionEnv, true>): DropInRouteDefaults => {
      const outputChars = cfg.get('RSTAR_DROP_IN_OUTPUT_CHARS', { infer: true });
      return {
        sandboxFusion: { timeoutMs: cfg.get('RSTAR_SANDBOX_FUSION_TIMEOUT_MS', { infer: true }), outputChars },
        codeJudge: { timeoutMs: cfg.get('RSTAR_CODE_JUDGE_TIMEOUT_MS', { infer: true }), outputChars },
      };
    },
  },
];
