import type { FactoryProvider, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { ConfigService } from '@nestjs/config';
import { ReadinessRegistry } from '@rstar/nest-runtime';
import { bwrapUsable, DEFAULT_MAXIMA, SandboxPool, type DropInDefaults } from '@rstar/sandbox';
import { ToolExecutionMetrics } from '@rstar/tool-calls';
import { createLogger, type Logger } from '@rstar/telemetry';
import { DROP_IN_DEFAULTS, SANDBOX_POOL, TOOL_METRICS } from './tokens';
import type { ToolExecutionEnv } from './tool-execution.config';

/** How often a service waiting for bubblewrap checks again (it may be installed, or user namespaces enabled, meanwhile). */
const ISOLATION_RECHECK_MS = 15_000;

/**
 * The sandbox pool as a provider: its zygotes start at module init (a local resource: a failure here,
 * e.g. no Python, ends the start with its message) and are torn down at shutdown, after the workers
 * that feed it stopped. Readiness reports the pool's health.
 *
 * Fails closed on isolation: with `RSTAR_SANDBOX_ISOLATION=bwrap` (the default) and bubblewrap unusable,
 * the pool does not start (no program runs without isolation), readiness is false and says why and the
 * fix, and the check is repeated every 15 s; the bus worker waits ({@link whenRunning}) instead of taking
 * tool calls. Only an explicit `RSTAR_SANDBOX_ISOLATION=none` runs unisolated.
 */
export class SandboxPoolLifecycle implements OnModuleInit, OnApplicationShutdown {
  /** Why the pool is not started (isolation missing), or null. */
  private blocked: string | null = null;
  private recheck: NodeJS.Timeout | null = null;
  private running!: () => void;
  private readonly started = new Promise<void>((res) => (this.running = res));

  constructor(
    readonly pool: SandboxPool,
    registry: ReadinessRegistry,
    private readonly isolation: 'bwrap' | 'none',
    private readonly log: Logger,
  ) {
    registry.register({
      name: 'sandbox',
      probe: () => {
        if (this.blocked) return { ready: false, details: { isolation: 'none', reason: this.blocked } };
        const h = pool.health();
        return { ready: h.ok, details: { workers: h.workers, queueDepth: h.queueDepth, isolation: h.isolation, warnings: h.warnings } };
      },
    });
  }

  async onModuleInit(): Promise<void> {
    if (this.isolation === 'bwrap') {
      const b = bwrapUsable();
      if (!b.ok) {
        this.blocked = `${b.reason}; programs are not run without isolation: install bubblewrap (infra/local/install.sh) and allow unprivileged user namespaces, or set RSTAR_SANDBOX_ISOLATION=none to run them with rlimits only`;
        this.log.error(`sandbox NOT READY: ${this.blocked}`, { field: 'RSTAR_SANDBOX_ISOLATION' });
        this.recheck = setInterval(() => void this.retry(), ISOLATION_RECHECK_MS);
        this.recheck.unref();
        return;
      }
    }
    await this.pool.start();
    this.running();
  }

  /** Resolves once the pool runs (never, while isolation is required and missing). */
  whenRunning(): Promise<void> {
    return this.started;
  }

  private async retry(): Promise<void> {
    if (!this.blocked || !bwrapUsable().ok) return;
    clearInterval(this.recheck!);
    this.recheck = null;
    try {
      await this.pool.start();
      this.blocked = null;
      this.log.info('bubblewrap is usable now; sandbox pool started');
      this.running();
    } catch (e) {
      this.blocked = `sandbox pool failed to start: ${(e as Error).message}`;
      this.log.error(this.blocked);
    }
  }

  async onApplicationShutdown(): Promise<void> {
    if (this.recheck) clearInterval(this.recheck);
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
      const isolation = cfg.get('RSTAR_SANDBOX_ISOLATION', { infer: true });
      const pool = new SandboxPool({
        workers: cfg.get('RSTAR_SANDBOX_WORKERS', { infer: true }),
        python: cfg.get('RSTAR_PYTHON', { infer: true }),
        queueLimit: cfg.get('RSTAR_SANDBOX_QUEUE_LIMIT', { infer: true }),
        maxima: {
          ...(maxTimeout ? { timeoutMs: maxTimeout } : {}),
          // The drop-in routes may keep more per stream than the pool's own maximum: not clamped below it.
          outputChars: Math.max(DEFAULT_MAXIMA.outputChars, cfg.get('RSTAR_DROP_IN_OUTPUT_CHARS', { infer: true })),
        },
        isolation,
        onWarning: (m) => log.warn(m),
      });
      return new SandboxPoolLifecycle(pool, registry, isolation, log);
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
