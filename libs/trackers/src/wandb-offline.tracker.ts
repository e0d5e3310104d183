import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { TrackerError, type RolloutSample, type TrackedRun, type TrackerSink } from './tracker.port';

/** Settings of the W&B sink (`trackers.wandb` of the run config). */
export interface WandbOfflineOptions {
  project: string;
  /** Folder the offline run goes under (`<dir>/wandb/offline-run-*`). */
  dir: string;
  /** Python with the `wandb` package (default `python3`). */
  python?: string;
  /** Milliseconds to wait for each answer of the W&B process (default 120000: `wandb.init` is slow on a loaded machine). */
  timeoutMs?: number;
}

/** The Python side (wandb's own client in offline mode), next to this lib. */
export const WANDB_SINK_SCRIPT = resolve(__dirname, '../python/wandb_offline_sink.py');

/**
 * Logs a run to Weights & Biases in offline mode, without any network: a long-lived Python process runs
 * wandb's own client with `mode="offline"` (so the files are exactly what `wandb sync` uploads) and takes
 * one JSON request per line on stdin ({@link WANDB_SINK_SCRIPT}). The run id is derived from the rstar run
 * id, so a resumed run appends to the same W&B run. After the run: `wandb sync <runDir>`.
 * Errors: {@link TrackerError} `tracker_unavailable` when Python or the wandb package is missing.
 */
export class WandbOfflineTracker implements TrackerSink {
  readonly name = 'wandb';
  private proc: ChildProcessWithoutNullStreams | null = null;
  private answers: Array<(a: { ok?: boolean; error?: string; runDir?: string }) => void> = [];
  private stderr = '';
  private chain: Promise<unknown> = Promise.resolve();
  /** The offline run folder (after `start`): pass it to `wandb sync`. */
  runDir: string | null = null;

  constructor(private readonly o: WandbOfflineOptions) {}

  async start(run: TrackedRun): Promise<void> {
    const dir = resolve(this.o.dir);
    mkdirSync(dir, { recursive: true });
    const python = this.o.python ?? 'python3';
    const proc = spawn(python, [WANDB_SINK_SCRIPT], { stdio: ['pipe', 'pipe', 'pipe'], env: { ...process.env, WANDB_MODE: 'offline', WANDB_DIR: dir } });
    this.proc = proc;
    proc.stderr.on('data', (b: Buffer) => (this.stderr = (this.stderr + b.toString()).slice(-4000)));
    createInterface({ input: proc.stdout }).on('line', (l) => {
      let a: { ok?: boolean; error?: string; runDir?: string };
      try {
        a = JSON.parse(l);
      } catch {
        return; // a library's stray print
      }
      this.answers.shift()?.(a);
    });
    proc.on('error', (e) => this.failAll(`cannot start ${python} (${e.message}); set trackers.wandb.python to a Python with the wandb package`));
    proc.on('exit', (code) => this.failAll(`the W&B process exited (${code}): ${this.stderr.trim().split('\n').slice(-3).join(' | ')}`));
    const a = await this.send({ op: 'init', dir, project: this.o.project, name: run.name, id: wandbId(run.runId), config: { ...run.config, seed: run.seed, rstarRunId: run.runId, mode: run.mode, codeVersion: run.codeVersion } });
    this.runDir = a.runDir ?? join(dir, 'wandb');
  }

  async logStep(step: number, _stage: string, metrics: Record<string, number | null>): Promise<void> {
    const m = Object.fromEntries(Object.entries(metrics).filter(([, v]) => typeof v === 'number' && Number.isFinite(v)));
    await this.send({ op: 'log', step, metrics: m });
  }

  async logEvaluation(e: { name: string; afterStep: number; passAt1: number }): Promise<void> {
    await this.send({ op: 'log', step: e.afterStep, metrics: { [`heldOut/${e.name}/passAt1`]: e.passAt1 } });
  }

  async logRollouts(step: number, rows: readonly RolloutSample[]): Promise<void> {
    if (rows.length === 0) return;
    const cols: Array<keyof RolloutSample> = ['step', 'rolloutId', 'promptId', 'reward', 'correct', 'rule', 'toolCalls', 'toolErrors', 'responseTokens', 'response'];
    await this.send({ op: 'table', step, columns: cols, data: rows.map((r) => cols.map((c) => r[c])) });
  }

  async finish(status: 'completed' | 'failed'): Promise<void> {
    if (!this.proc) return;
    await this.send({ op: 'finish', exitCode: status === 'completed' ? 0 : 1 });
    const p = this.proc;
    this.proc = null;
    if (p.exitCode === null) await new Promise((r) => p.once('exit', r));
  }

  /** One request, answered in order; requests queue behind each other. */
  private send(req: Record<string, unknown>): Promise<{ ok?: boolean; error?: string; runDir?: string }> {
    const next = this.chain.then(
      () =>
        new Promise<{ ok?: boolean; error?: string; runDir?: string }>((res, rej) => {
          const proc = this.proc;
          if (!proc || proc.exitCode !== null) return rej(new TrackerError('tracker_unavailable', this.name, `the W&B process is not running: ${this.stderr.trim().slice(-500)}`, 'trackers.wandb'));
          const t = setTimeout(() => rej(new TrackerError('tracker_unreachable', this.name, `no answer to "${req.op}" in ${this.o.timeoutMs ?? 120_000} ms`, 'trackers.wandb')), this.o.timeoutMs ?? 120_000);
          this.answers.push((a) => {
            clearTimeout(t);
            if (a.error) rej(new TrackerError(/not installed|cannot start/.test(a.error) ? 'tracker_unavailable' : 'tracker_rejected', this.name, `${req.op}: ${a.error}`, 'trackers.wandb'));
            else res(a);
          });
          proc.stdin.write(JSON.stringify(req) + '\n');
        }),
    );
    this.chain = next.catch(() => undefined);
    return next;
  }

  private failAll(msg: string): void {
    for (const a of this.answers.splice(0)) a({ error: msg });
  }
}

/** A W&B run id from an rstar run id: W&B ids allow letters, digits, `-` and `_` (at most 64 characters here). */
export function wandbId(runId: string): string {
  return runId.replace(/[^A-Za-z0-9_-]/g, '-').slice(0, 64);
}
