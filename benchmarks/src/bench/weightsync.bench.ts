import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DistributedWeightSync, SglangAdapter, TrainerWeightSource, probeTokens, runWeightProbe } from '@rstar/engines';
import { buildTrainingBatch, writeBatchV2 } from '@rstar/grpo';
import { TrainerWorkerClient, makeTinyModel, startReferenceEngine, startTrainerWorker, workersPythonForTests } from '@rstar/workers';
import { intArg } from './bench.args';

async function freePort(): Promise<number> {
  return new Promise((ok, fail) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const p = (s.address() as { port: number }).port;
      s.close(() => ok(p));
    });
    s.on('error', fail);
  });
}

/**
 * `pnpm bench weightsync [--layers N] [--hidden N] [--bucket-mb N] [--threads N]`: one policy update into
 * the reference engine both ways, in the same run, on a random Qwen2 of >= 100M parameters (built locally,
 * no download), CPU, fp32 (the engine serves fp32 on CPU, so the wire dtype is fp32: twice bf16's bytes).
 *
 * - disk: the trainer worker's checkpoint write of the step (step seconds - train seconds: gather, HF
 *   safetensors, sha256 manifest, AdamW state) plus the engine's `/update_weights_from_disk` of it;
 * - distributed: {@link DistributedWeightSync} of the same policy version from the trainer's memory over
 *   gloo (the group formed before, as a run does once), bucket by bucket.
 *
 * The write includes the AdamW state and the sha256 manifest, which a run writes today at every step either
 * way; `speedup_vs_load_only` compares with the engine's load alone (the disk path's lower bound).
 * Then the behaviour probe (32 tokens) on the engine. Last line:
 * `{"bench":"weightsync","params","disk_s","distributed_s","speedup","probe_ms",...}` (goal: speedup >= 4).
 */
export async function run(args: string[]): Promise<Record<string, unknown>> {
  const python = workersPythonForTests();
  if (!python) throw new Error('no worker Python: run `bash workers/setup.sh` first (or set RSTAR_WORKERS_PYTHON)');
  const layers = intArg(args, '--layers', 14);
  const hidden = intArg(args, '--hidden', 768);
  const bucketMB = intArg(args, '--bucket-mb', 512);
  const threads = intArg(args, '--threads', 2);
  const tmp = mkdtempSync(join(tmpdir(), 'rstar-bench-weightsync-'));
  const procs: { stop(): Promise<void> }[] = [];
  try {
    const model = join(tmp, 'model');
    const made = await makeTinyModel({ out: model, hiddenSize: hidden, layers, heads: 12, kvHeads: 12, intermediateSize: hidden * 4, vocabSize: 2048, maxPositions: 1024 });
    const [trainer, engine] = await Promise.all([
      startTrainerWorker({ model, stateDir: join(tmp, 'state'), threads }),
      startReferenceEngine({ model, kvCapacityTokens: 4096, threads }),
    ]);
    procs.push(trainer, engine);
    const client = new TrainerWorkerClient(trainer.url);
    const info = await client.info();

    // One GRPO step so there is a new policy version (1) to send; its checkpoint is the disk path's write.
    const rollouts = Array.from({ length: 4 }, (_, i) => ({
      rolloutId: `r${i}`, reward: i % 2, promptTokenIds: probeTokens(info.vocabSize, 16).map((t) => (t + i) % info.vocabSize),
      responseTokenIds: probeTokens(info.vocabSize, 32), logprobs: Array(32).fill(-7.6), lossMask: Array(32).fill(1),
    }));
    const batch = buildTrainingBatch([{ groupId: 'g0', rollouts }]);
    const file = writeBatchV2(batch, { runId: 'bench', step: 0, policyVersion: 0 });
    const batchUri = join(tmp, 'batch-0.safetensors');
    writeFileSync(batchUri, file.bytes);
    const res = await client.trainStep('bench', 0, { batchUri, batchHash: file.batchHash, policyVersion: 0, mode: 'grpo', optimizer: { lr: 1e-4 } }, 3_600_000);
    const r = res as unknown as { stepSeconds: number; trainSeconds: number; checkpoint: { uri: string } };
    const writeS = r.stepSeconds - r.trainSeconds;

    const sglang = new SglangAdapter('ref-0', engine.url);
    let t = performance.now();
    await sglang.updateWeights(r.checkpoint.uri, { version: 1 });
    const loadS = (performance.now() - t) / 1000;
    const diskS = writeS + loadS;

    const engines = [{ id: sglang.id, transfer: sglang.weightTransfer() }];
    const source = new TrainerWeightSource(trainer.url);
    const sync = new DistributedWeightSync({
      trainer: source, engines, bucketMB, dtype: 'float32',
      group: { masterAddress: '127.0.0.1', masterPort: await freePort(), groupName: 'rstar-bench-weightsync', backend: 'gloo' },
    });
    t = performance.now();
    await sync.init();
    const initS = (performance.now() - t) / 1000;
    const sent = await sync.sync({ runId: 'bench', policyVersion: 1 });

    const tokenIds = probeTokens(info.vocabSize, 32);
    t = performance.now();
    const [probe] = await runWeightProbe({ trainer: source, engines, version: 1, sync: 'distributed', tokenIds, tolerance: 1e-4, policy: { runId: 'bench', policyVersion: 1 } });
    const probeMs = performance.now() - t;
    return {
      bench: 'weightsync', params: made.parameters ?? info.parameters, bytes: sent.bytes, buckets: sent.buckets, bucket_mb: bucketMB, wire_dtype: 'float32',
      disk_write_s: round(writeS), disk_load_s: round(loadS), disk_s: round(diskS), group_init_s: round(initS), distributed_s: round(sent.seconds),
      speedup: round(diskS / sent.seconds), speedup_vs_load_only: round(loadS / sent.seconds), probe_ms: round(probeMs), probe_max_abs_diff: probe.maxAbsDiff, threads,
    };
  } finally {
    await Promise.all(procs.map((p) => p.stop().catch(() => undefined)));
    rmSync(tmp, { recursive: true, force: true });
  }
}

const round = (x: number) => Math.round(x * 1000) / 1000;
