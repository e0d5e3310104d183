import { TrackerError, type RolloutSample, type TrackedRun, type TrackerSink } from './tracker.port';

/** Settings of the MLflow sink (`trackers.mlflow` of the run config). */
export interface MlflowOptions {
  /** Tracking server, e.g. `http://127.0.0.1:5000`. */
  trackingUri: string;
  /** Experiment name; created when missing. */
  experiment: string;
  /** Milliseconds per HTTP call before it counts as unreachable (default 15000). */
  timeoutMs?: number;
}

// MLflow's LogBatch limits: 1000 metrics, 100 params, 100 tags, 1000 items in all per request.
const MAX_METRICS = 1000;
const MAX_PARAMS = 100;
const PARAM_VALUE_CHARS = 500;
const TABLE_FILE = 'rollouts.json';

/**
 * Logs a run to an MLflow tracking server through its REST API (`/api/2.0/mlflow`): the experiment
 * (get-by-name, else create), one MLflow run per rstar run (tag `rstar.runId`, the flattened config as
 * params), each step's metrics with `log-batch` at their step, held-out pass@1 as `heldOut.<name>.passAt1`,
 * and the sampled rollouts as a table artifact (`rollouts.json`, shown in the run's artifacts and, through the
 * `mlflow.loggedArtifacts` tag, in MLflow's table view) uploaded through the server's artifact proxy
 * (`/api/2.0/mlflow-artifacts`, MLflow's default `--serve-artifacts`). Errors are {@link TrackerError}s.
 */
export class MlflowTracker implements TrackerSink {
  readonly name = 'mlflow';
  private runId: string | null = null;
  private artifactPath: string | null = null;
  private readonly table: RolloutSample[] = [];
  private readonly base: string;

  constructor(private readonly o: MlflowOptions) {
    this.base = o.trackingUri.replace(/\/+$/, '');
  }

  /** The MLflow run id (after `start`). */
  get mlflowRunId(): string | null {
    return this.runId;
  }

  async start(run: TrackedRun): Promise<void> {
    const experimentId = await this.experimentId();
    const created = await this.call<{ run: { info: { run_id: string; artifact_uri: string } } }>('POST', 'mlflow/runs/create', {
      experiment_id: experimentId, run_name: `${run.name} ${run.runId.slice(0, 13)}`, start_time: Date.now(),
      tags: [
        { key: 'rstar.runId', value: run.runId }, { key: 'rstar.mode', value: run.mode }, { key: 'rstar.codeVersion', value: run.codeVersion },
        { key: 'mlflow.source.name', value: 'rstar train' },
      ],
    });
    this.runId = created.run.info.run_id;
    const uri = created.run.info.artifact_uri;
    this.artifactPath = uri.startsWith('mlflow-artifacts:/') ? uri.slice('mlflow-artifacts:/'.length).replace(/^\/+/, '') : null;
    // MLflow refuses a batch with a key twice: a run config that has `seed` itself gives it once.
    const byKey = new Map<string, string>([['seed', String(run.seed)], ...flatten(run.config)]);
    const params = [...byKey].map(([key, value]) => ({ key, value: value.slice(0, PARAM_VALUE_CHARS) }));
    for (let i = 0; i < params.length; i += MAX_PARAMS) await this.batch({ params: params.slice(i, i + MAX_PARAMS) });
  }

  async logStep(step: number, _stage: string, metrics: Record<string, number | null>, at: number): Promise<void> {
    const list = Object.entries(metrics)
      .filter((e): e is [string, number] => typeof e[1] === 'number' && Number.isFinite(e[1]))
      .map(([key, value]) => ({ key, value, timestamp: at, step }));
    for (let i = 0; i < list.length; i += MAX_METRICS) await this.batch({ metrics: list.slice(i, i + MAX_METRICS) });
  }

  async logEvaluation(e: { name: string; afterStep: number; passAt1: number }, at: number): Promise<void> {
    await this.batch({ metrics: [{ key: `heldOut.${e.name}.passAt1`, value: e.passAt1, timestamp: at, step: e.afterStep }] });
  }

  async logRollouts(_step: number, rows: readonly RolloutSample[]): Promise<void> {
    if (!this.artifactPath || rows.length === 0) return;
    this.table.push(...rows);
    const cols: Array<keyof RolloutSample> = ['step', 'rolloutId', 'promptId', 'reward', 'correct', 'rule', 'toolCalls', 'toolErrors', 'responseTokens', 'response'];
    const body = JSON.stringify({ columns: cols, data: this.table.map((r) => cols.map((c) => r[c])) });
    await this.request('PUT', `mlflow-artifacts/artifacts/${this.artifactPath}/${TABLE_FILE}`, body);
    await this.batch({ tags: [{ key: 'mlflow.loggedArtifacts', value: JSON.stringify([{ path: TABLE_FILE, type: 'table' }]) }] });
  }

  async finish(status: 'completed' | 'failed'): Promise<void> {
    if (!this.runId) return;
    await this.call('POST', 'mlflow/runs/update', { run_id: this.runId, status: status === 'completed' ? 'FINISHED' : 'FAILED', end_time: Date.now() });
  }

  private async experimentId(): Promise<string> {
    try {
      const r = await this.call<{ experiment: { experiment_id: string } }>('GET', `mlflow/experiments/get-by-name?experiment_name=${encodeURIComponent(this.o.experiment)}`);
      return r.experiment.experiment_id;
    } catch (e) {
      if (!(e instanceof TrackerError) || !/RESOURCE_DOES_NOT_EXIST/.test(e.message)) throw e;
    }
    return (await this.call<{ experiment_id: string }>('POST', 'mlflow/experiments/create', { name: this.o.experiment })).experiment_id;
  }

  private async batch(b: { metrics?: unknown[]; params?: unknown[]; tags?: unknown[] }): Promise<void> {
    if (!this.runId) throw new TrackerError('tracker_rejected', this.name, 'logged before start()', 'trackers.mlflow');
    await this.call('POST', 'mlflow/runs/log-batch', { run_id: this.runId, metrics: b.metrics ?? [], params: b.params ?? [], tags: b.tags ?? [] });
  }

  private async call<T = unknown>(method: 'GET' | 'POST', path: string, body?: unknown): Promise<T> {
    const text = await this.request(method, path, body === undefined ? undefined : JSON.stringify(body));
    return (text ? JSON.parse(text) : {}) as T;
  }

  private async request(method: string, path: string, body?: string): Promise<string> {
    const url = `${this.base}/api/2.0/${path}`;
    let r: Response;
    try {
      r = await fetch(url, { method, body, headers: body ? { 'content-type': 'application/json' } : undefined, signal: AbortSignal.timeout(this.o.timeoutMs ?? 15_000) });
    } catch (e) {
      throw new TrackerError('tracker_unreachable', this.name, `${method} ${url} failed (${(e as Error).message}); is the tracking server at trackers.mlflow.trackingUri running?`, 'trackers.mlflow.trackingUri');
    }
    const text = await r.text();
    if (!r.ok) throw new TrackerError('tracker_rejected', this.name, `${method} ${path} answered ${r.status}: ${text.slice(0, 300)}`, 'trackers.mlflow');
    return text;
  }
}

/** Flatten a config into `a.b.c` keys and string values (arrays by index), in key order. */
export function flatten(obj: unknown, prefix = ''): Array<[string, string]> {
  if (obj === null || typeof obj !== 'object') return prefix ? [[prefix, String(obj)]] : [];
  const out: Array<[string, string]> = [];
  const entries = Array.isArray(obj) ? obj.map((v, i) => [String(i), v] as const) : Object.entries(obj as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  for (const [k, v] of entries) out.push(...flatten(v, prefix ? `${prefix}.${k}` : k));
  return out;
}
