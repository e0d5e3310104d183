import { RstarError, type EventData, type RunConfig, type WeightProbeResult } from '@rstar/contracts';
import {
  DistributedWeightSync, EngineResponseError, TrainerWeightSource, defaultProbeTolerance, runWeightProbe, WeightProbeError,
  type EngineAdapter, type SyncEngine,
} from '@rstar/engines';
import type { PolicyDelivery, PolicyUpdate } from '../driver';
import { weightSyncPort } from './group-port';

/** An engine did not report the policy version it was sent within the wait (policy-serving did not load it). */
export class PolicyDeliveryTimeoutError extends RstarError {
  constructor(engineId: string, version: number, reported: string | null, waitedMs: number) {
    super(
      'policy_delivery_timeout',
      `engine ${engineId} still reports weight version ${JSON.stringify(reported)} ${Math.round(waitedMs / 1000)} s after policy version ${version} was published; ` +
        'is policy-serving running and following PolicyUpdated? (raise trainer.stepTimeoutS if its rollouts in flight take longer)',
      'trainer.stepTimeoutS',
    );
  }
}

/** Options of {@link HfPolicyDelivery}. */
export interface HfPolicyDeliveryOptions {
  runId: string;
  /** The run config (its `trainer.weightSync*` and `trainer.probeTolerance` fields). */
  config: RunConfig;
  /** The trainer worker's URL (its host is the group's rendezvous: `trainer.weightSyncPort` there). */
  trainerUrl: string;
  /** The run's engines (the same servers policy-serving samples on). */
  engines: readonly EngineAdapter[];
  /** The fixed probe sequence (`probeTokens(vocabSize)` of @rstar/engines). */
  probeTokenIds: number[];
  /** How long to wait for every engine to report a delivered version (ms). */
  waitMs: number;
  /** Poll interval of that wait (ms, default 200). */
  pollMs?: number;
}

/**
 * The trainer-worker side of docs/design/protocol.md §9 for distributed runs: at run start
 * ({@link start}) the engines must serve the weight-transfer routes and the group is formed once (the
 * trainer as rank 0, engine i as rank 1 + i); per update, {@link describe} gives the bucket plan that
 * `PolicyUpdated.sync` carries and {@link deliver} has the trainer broadcast each bucket (policy-serving has
 * the engines receive them), waits until every engine reports the new version and scores the behaviour
 * probe on each against the trainer. `weightSync: disk`: no group, nothing broadcast; policy-serving loads the
 * checkpoint and the same wait and probe follow.
 */
export class HfPolicyDelivery implements PolicyDelivery {
  readonly trainer: TrainerWeightSource;
  private readonly distributed: boolean;
  private readonly dtype: string;
  private readonly tolerance: number;
  private readonly groupName: string;
  /** The version this process last probed, and whether the trainer held it as that run's policy (else: its start weights). */
  private probed: { version: number; policy: boolean } | null = null;

  constructor(private readonly o: HfPolicyDeliveryOptions) {
    this.trainer = new TrainerWeightSource(o.trainerUrl);
    this.distributed = o.config.trainer.weightSync === 'distributed';
    this.dtype = o.config.trainer.weightSyncDtype;
    this.tolerance = defaultProbeTolerance(this.dtype, o.config.trainer.probeTolerance);
    this.groupName = `rstar-weights-${o.runId}`;
  }

  /** The engines as the probe and the group see them. @throws EngineResponseError for an engine that has neither. */
  private syncEngines(): SyncEngine[] {
    return this.o.engines.map((a) => {
      if (!a.weightTransfer) throw new EngineResponseError(a.id, `engines of kind ${a.kind} serve no prompt logprobs for the weight probe (use sglang or vllm engines)`);
      return { id: a.id, transfer: a.weightTransfer() };
    });
  }

  /**
   * `distributed`: every engine must serve the weight-transfer routes (nothing is joined).
   * @throws WeightTransferUnsupportedError naming the engine, the route and the server flag.
   */
  async checkRoutes(): Promise<void> {
    if (!this.distributed) return;
    for (const a of this.o.engines) {
      if (!a.checkWeightTransfer) throw new EngineResponseError(a.id, `engines of kind ${a.kind} cannot join a weight-update group; set trainer.weightSync: disk`);
      await a.checkWeightTransfer();
    }
  }

  /**
   * Run start (and every resume): `distributed` checks the routes ({@link checkRoutes}), then forms the group
   * (every rank joins at once; a re-formed group replaces the old one on both sides).
   */
  async start(): Promise<void> {
    if (!this.distributed) return;
    await this.checkRoutes();
    await (await this.group()).init();
  }

  /** The group as formed now: a new local port each time it is formed when the config names none ({@link weightSyncPort}). */
  private async group(): Promise<DistributedWeightSync> {
    const t = this.o.config.trainer;
    const masterAddress = new URL(this.o.trainerUrl).hostname;
    return new DistributedWeightSync({
      trainer: this.trainer, engines: this.syncEngines(), bucketMB: t.weightSyncBucketMB, dtype: this.dtype,
      group: { masterAddress, masterPort: await weightSyncPort(t.weightSyncPort, masterAddress), groupName: this.groupName },
    });
  }

  /**
   * `distributed`: the bucket plan of `update` for `PolicyUpdated.sync`. A trainer worker that restarted since
   * the group formed (SIGKILLed mid-step and back on its state directory) holds no group: the group is formed
   * again, engines included, before the update is published, so the engines receive from the live trainer.
   */
  async describe(update: PolicyUpdate, step: number): Promise<EventData<'PolicyUpdated'>['sync']> {
    if (!this.distributed) return undefined;
    const plan = await this.trainer.plan({ runId: this.o.runId, policyVersion: update.version }, this.o.config.trainer.weightSyncBucketMB, this.dtype);
    if (plan.groupName !== undefined && plan.groupName !== this.groupName) await (await this.group()).init();
    return { kind: 'distributed', step, groupName: this.groupName, dtype: this.dtype, buckets: plan.buckets };
  }

  async deliver(update: PolicyUpdate, sync: EventData<'PolicyUpdated'>['sync']): Promise<WeightProbeResult[]> {
    const t0 = performance.now();
    // A resumed step whose broadcast already reached every engine is not sent again (nobody would receive it).
    if (sync && !(await this.allHold(update.version))) {
      const policy = { runId: this.o.runId, policyVersion: update.version };
      for (const k of sync.buckets.keys()) await this.trainer.sendBucket(k, policy, this.o.config.trainer.weightSyncBucketMB, sync.dtype, sync.groupName);
    }
    await this.waitFor(update.version);
    const syncSeconds = (performance.now() - t0) / 1000;
    return this.probe(update.version, sync ? 'distributed' : 'disk', { runId: this.o.runId, policyVersion: update.version }, syncSeconds);
  }

  /**
   * Score the probe on every engine against the trainer's logprobs (of `policy` when given, else of what the
   * trainer holds). @throws WeightProbeError naming the engine, the version and the worst token.
   */
  async probe(version: number, sync: 'distributed' | 'disk', policy?: { runId: string; policyVersion: number }, syncSeconds?: number): Promise<WeightProbeResult[]> {
    const withSeconds = (r: WeightProbeResult) => (syncSeconds === undefined ? r : { ...r, syncSeconds });
    this.probed = null;
    try {
      const rs = await runWeightProbe({ trainer: this.trainer, engines: this.syncEngines(), version, sync, tokenIds: this.o.probeTokenIds, tolerance: this.tolerance, ...(policy ? { policy } : {}) });
      this.probed = { version, policy: policy !== undefined };
      return rs.map(withSeconds);
    } catch (e) {
      if (e instanceof WeightProbeError) throw new WeightProbeError(withSeconds(e.result));
      throw e;
    }
  }

  async verify(version: number): Promise<void> {
    const p = this.probed;
    if (!p || p.version !== version) return;
    await this.probe(version, this.distributed && p.policy ? 'distributed' : 'disk', p.policy ? { runId: this.o.runId, policyVersion: version } : undefined);
  }

  private async reported(a: EngineAdapter): Promise<string | null> {
    return a.loadedWeights ? (await a.loadedWeights()).weightVersion : null;
  }

  private async allHold(version: number): Promise<boolean> {
    const rs = await Promise.all(this.o.engines.map((a) => this.reported(a)));
    return rs.every((v) => v === String(version));
  }

  /** Wait until every engine that reports a weight version reports `version`. @throws PolicyDeliveryTimeoutError */
  private async waitFor(version: number): Promise<void> {
    const t0 = Date.now();
    for (const a of this.o.engines) {
      if (!a.loadedWeights) continue;
      for (;;) {
        const v = await this.reported(a);
        if (v === String(version)) break;
        if (Date.now() - t0 > this.o.waitMs) throw new PolicyDeliveryTimeoutError(a.id, version, v, Date.now() - t0);
        await new Promise((r) => setTimeout(r, this.o.pollMs ?? 200));
      }
    }
  }
}
