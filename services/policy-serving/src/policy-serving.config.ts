import { SCHEDULING_POLICIES, type SchedulingPolicy } from './scheduler/engine.picker';

/** A bad service setting; the message names the variable and the fix. */
export class ServiceConfigError extends Error {
  readonly code = 'invalid_service_config';
  constructor(message: string, readonly field: string) {
    super(message);
    this.name = 'ServiceConfigError';
  }
}

/** policy-serving's settings, from the environment. */
export interface PolicyServingConfig {
  natsUrl: string;
  /** JetStream stream and subject prefix (defaults RSTAR, rstar). */
  stream?: string;
  subjectPrefix?: string;
  /** Engine specs `kind=url` (see createEngines). */
  engines: string[];
  port: number;
  policy: SchedulingPolicy;
  compactPrompt: boolean;
  concurrency: number;
  initialPolicyVersion: number;
  /** Stable instance identity naming the per-instance durables (see PolicyServingOptions.instanceId). */
  instanceId: string;
  /** Consumers' ack deadline in ms: how soon a restart gets back what the dead process held. */
  ackWaitMs: number;
}

/**
 * Read RSTAR_NATS_URL (default nats://127.0.0.1:4222), RSTAR_ENGINES (comma-separated `kind=url`,
 * required), PORT (default 3001), RSTAR_SCHEDULER (default kv-budget), RSTAR_COMPACT_PROMPT (1 = the tiny
 * built-in policy's prompt), RSTAR_ROLLOUT_CONCURRENCY (default 256), RSTAR_POLICY_VERSION (default 0),
 * RSTAR_STREAM / RSTAR_SUBJECT_PREFIX (JetStream stream and subject prefix; defaults RSTAR / rstar),
 * RSTAR_INSTANCE_ID (this replica's stable name, letters/digits/`_`/`-`, default `default`: a restart
 * with the same id resumes its durables and gets back the rollouts, tool results and policy update the
 * dead process held; give each replica its own id), RSTAR_ACK_WAIT_MS (default 30000, >= 1000).
 * @throws ServiceConfigError naming the variable.
 */
export function readConfig(env: NodeJS.ProcessEnv = process.env): PolicyServingConfig {
  const engines = (env.RSTAR_ENGINES ?? '').split(',').map((s) => s.trim()).filter(Boolean);
  if (engines.length === 0) throw new ServiceConfigError('RSTAR_ENGINES is empty; set it to e.g. "sglang=http://127.0.0.1:30000,builtin=http://127.0.0.1:30001"', 'RSTAR_ENGINES');
  const int = (name: string, def: number, min: number): number => {
    const raw = env[name];
    const v = raw === undefined || raw === '' ? def : Number(raw);
    if (!Number.isInteger(v) || v < min) throw new ServiceConfigError(`${name} must be an integer >= ${min}, got "${raw}"`, name);
    return v;
  };
  const policy = (env.RSTAR_SCHEDULER || 'kv-budget') as SchedulingPolicy;
  if (!SCHEDULING_POLICIES.includes(policy)) throw new ServiceConfigError(`RSTAR_SCHEDULER must be one of ${SCHEDULING_POLICIES.join(', ')}, got "${policy}"`, 'RSTAR_SCHEDULER');
  const instanceId = env.RSTAR_INSTANCE_ID || 'default';
  if (!/^[A-Za-z0-9_-]{1,64}$/.test(instanceId)) {
    throw new ServiceConfigError(`RSTAR_INSTANCE_ID must be 1-64 letters, digits, "_" or "-" (it names durable consumers), got "${instanceId}"`, 'RSTAR_INSTANCE_ID');
  }
  return {
    natsUrl: env.RSTAR_NATS_URL || 'nats://127.0.0.1:4222',
    stream: env.RSTAR_STREAM || undefined,
    subjectPrefix: env.RSTAR_SUBJECT_PREFIX || undefined,
    engines,
    port: int('PORT', 3001, 0),
    policy,
    compactPrompt: env.RSTAR_COMPACT_PROMPT === '1',
    concurrency: int('RSTAR_ROLLOUT_CONCURRENCY', 256, 1),
    initialPolicyVersion: int('RSTAR_POLICY_VERSION', 0, 0),
    instanceId,
    ackWaitMs: int('RSTAR_ACK_WAIT_MS', 30_000, 1_000),
  };
}
