import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeEvent, streams, type RstarEvent } from '@rstar/contracts';
import { InProcessBus } from '@rstar/messaging';
import { readHistory } from '@rstar/replay';
import { startMlflowServer, trackersPython, type MlflowServer } from '@rstar/testing';
import { MlflowTracker } from './mlflow.tracker';
import { TrackerError } from './tracker.port';
import { TrackerFeed } from './tracker.feed';
import { WandbOfflineTracker } from './wandb-offline.tracker';

const GOLDEN = join(__dirname, '../../../test/fixtures/golden-run/events.jsonl');
const RUN = 'golden-run-1';

/**
 * The golden run plus its held-out evaluations, as `rstar train` records them; its config carries `seed`
 * too, as a run config does (the sink must send that param once).
 */
function runEvents(): RstarEvent[] {
  const events = readHistory(GOLDEN);
  const started = events[0] as RstarEvent<'RunStarted'>;
  started.data.config = { ...started.data.config, seed: started.data.seed };
  const evals = [0, 2].map((afterStep) =>
    makeEvent('EvaluationCompleted', { runId: RUN, streamId: streams.run(RUN), key: `${RUN}:held-out:${afterStep}`, producer: 't', data: { name: 'held-out', afterStep, policyVersion: afterStep, passAt1: 0.25 + afterStep / 10, prompts: 4, samples: 1 } }),
  );
  return [events[0], evals[0], ...events.slice(1), evals[1]];
}

async function feed(sinks: ConstructorParameters<typeof TrackerFeed>[1]['sinks']): Promise<Error[]> {
  const bus = new InProcessBus();
  const errors: Error[] = [];
  const f = new TrackerFeed(bus, { runId: RUN, sinks, sampleRollouts: 3, onError: (e) => errors.push(e) });
  await f.start();
  await bus.publish(runEvents());
  await f.close('completed');
  await bus.close();
  return errors;
}

const steps = readHistory(GOLDEN).filter((e): e is RstarEvent<'StepCompleted'> => e.type === 'StepCompleted');

describe('MLflow sink against a real MLflow tracking server', () => {
  let mlflow: MlflowServer;
  beforeAll(async () => {
    mlflow = await startMlflowServer();
  }, 300_000);
  afterAll(async () => mlflow?.stop());

  const api = async (path: string) => (await fetch(`${mlflow.url}/api/2.0/${path}`)).json() as Promise<any>;

  it("logs each step's metrics at its step, the held-out pass@1, the config and a rollout table", async () => {
    const sink = new MlflowTracker({ trackingUri: mlflow.url, experiment: 'rstar-test' });
    expect(await feed([sink])).toEqual([]);
    const runId = sink.mlflowRunId!;
    const run = (await api(`mlflow/runs/get?run_id=${runId}`)).run;
    expect(run.info.status).toBe('FINISHED');
    expect(run.data.tags).toEqual(expect.arrayContaining([{ key: 'rstar.runId', value: RUN }]));
    expect(run.data.params).toEqual(expect.arrayContaining([{ key: 'seed', value: '20250101' }, { key: 'steps', value: '2' }, { key: 'mode', value: 'weighted' }]));
    const reward = (await api(`mlflow/metrics/get-history?run_id=${runId}&metric_key=rewardMean`)).metrics;
    expect(reward.map((m: any) => [m.step, m.value])).toEqual(steps.map((s) => [s.data.step, s.data.metrics.rewardMean]));
    const held = (await api(`mlflow/metrics/get-history?run_id=${runId}&metric_key=heldOut.held-out.passAt1`)).metrics;
    expect(held.map((m: any) => [m.step, m.value])).toEqual([[0, 0.25], [2, 0.45]]);
    const files = (await api(`mlflow/artifacts/list?run_id=${runId}`)).files;
    expect(files.map((f: any) => f.path)).toEqual(['rollouts.json']);
    const table = await (await fetch(`${mlflow.url}/get-artifact?path=rollouts.json&run_uuid=${runId}`)).json() as { columns: string[]; data: unknown[][] };
    expect(table.columns).toContain('response');
    expect(table.data).toHaveLength(6); // 3 sampled rollouts x 2 steps
  });

  it('reports an unreachable server as a TrackerError naming the setting, and the run goes on', async () => {
    const errors = await feed([new MlflowTracker({ trackingUri: 'http://127.0.0.1:9', experiment: 'x', timeoutMs: 2000 })]);
    expect(errors).toHaveLength(1);
    expect(errors[0]).toBeInstanceOf(TrackerError);
    expect(errors[0].message).toMatch(/trackers\.mlflow\.trackingUri/);
  });
});

describe('W&B sink in offline mode (wandb client, no network)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'rstar-wandb-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('writes an offline run that `wandb sync` would upload, holding every step and the rollout table', async () => {
    const python = trackersPython();
    const sink = new WandbOfflineTracker({ project: 'rstar-test', dir, python });
    expect(await feed([sink])).toEqual([]);
    expect(sink.runDir).toMatch(/offline-run-\d+_\d+-golden-run-1$/);
    const file = join(sink.runDir!, readdirSync(sink.runDir!).find((f) => f.endsWith('.wandb'))!);
    // Read the records back with wandb's own protobuf schema (the .wandb file is a LevelDB-style log).
    const script = `
import json, struct, sys
from wandb.proto import wandb_internal_pb2 as pb
data = open(sys.argv[1], 'rb').read()
assert data[:4] == b':W&B', data[:7]
pos, buf, out, BLOCK = 7, b'', [], 32768
while pos + 7 <= len(data):
    left = BLOCK - pos % BLOCK
    if left < 7:
        pos += left; continue
    crc, n, t = struct.unpack('<IHB', data[pos:pos + 7])
    if t == 0 and n == 0:
        pos += left; continue
    chunk = data[pos + 7:pos + 7 + n]; pos += 7 + n
    if t == 1: recs = [chunk]
    elif t == 2: buf = chunk; recs = []
    elif t == 3: buf += chunk; recs = []
    else: recs = [buf + chunk]
    for r in recs:
        rec = pb.Record(); rec.ParseFromString(r)
        if rec.WhichOneof('record_type') == 'history':
            out.append({(i.key or '/'.join(i.nested_key)): i.value_json for i in rec.history.item})
print(json.dumps(out))
`;
    const history = JSON.parse(execFileSync(python, ['-c', script, file], { encoding: 'utf8' })) as Array<Record<string, string>>;
    const rewards = history.filter((h) => 'rewardMean' in h).map((h) => [Number(h._step), Number(h.rewardMean)]);
    expect(rewards).toEqual(steps.map((s) => [s.data.step, s.data.metrics.rewardMean]));
    expect(history.some((h) => 'heldOut/held-out/passAt1' in h)).toBe(true);
    // A logged wandb.Table is a history entry of nested keys (`rollouts/_type`, `rollouts/nrows`, ...).
    expect(history.filter((h) => h['rollouts/_type'] === '"table-file"').map((h) => Number(h['rollouts/nrows']))).toEqual([3, 6]);
    const dry = spawnSync(join(python, '..', 'wandb'), ['sync', '--dry-run', sink.runDir!], { cwd: dir, encoding: 'utf8' });
    expect(dry.stdout + dry.stderr).toMatch(/Would sync 1 run/);
  }, 240_000);

  it('a Python without wandb is a tracker_unavailable error naming the fix', async () => {
    // The sandbox's venv (infra/local/setup.sh) has numpy and sympy but no wandb.
    const python = join(__dirname, '../../../.venv/bin/python');
    expect(spawnSync(python, ['-c', 'import wandb']).status, `${python} must lack wandb for this check`).not.toBe(0);
    const errors = await feed([new WandbOfflineTracker({ project: 'p', dir, python })]);
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatchObject({ code: 'tracker_unavailable', field: 'trackers.wandb' });
    expect(errors[0].message).toMatch(/pip install wandb/);
  }, 60_000);
});
