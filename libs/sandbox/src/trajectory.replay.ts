import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { REPO_ROOT } from './python.resolver';
import type { ExecResult } from './sandbox.types';
import { SandboxDataNotFoundError } from './sandbox.errors';

/**
 * Default location of the recorded trajectories: env RSTAR_TRAJECTORY_DIR, else ../shared/trajectories
 * from the repo root (a checkout elsewhere than beside shared/ names it with the variable).
 */
export const DEFAULT_TRAJECTORY_DIR = process.env.RSTAR_TRAJECTORY_DIR || resolve(REPO_ROOT, '../shared/trajectories');

/** One recorded trajectory reduced to what a replay needs. */
export interface RecordedTrajectory {
  id: string;
  source: string;
  /** The source harness kept one interpreter per trajectory (MathCoder: Jupyter, MINT: IPython). */
  stateful: boolean;
  blocks: { code: string; recorded: string | null }[];
}

/** How a replayed block compares with its recorded output. */
export type ReplayKind =
  | 'same'
  | 'both_error'
  | 'not_recorded'
  | 'recorded_timeout'
  | 'our_timeout'
  | 'live_tool'
  | 'error_mismatch'
  | 'after_session_reset'
  | 'differs';

/** Kinds counted as agreement. */
export const AGREEING: ReadonlySet<ReplayKind> = new Set(['same', 'both_error']);

/**
 * Load every `*.jsonl` of the trajectory collection (schema: ../shared/trajectories/README.md).
 * `every` keeps one trajectory in `every` (deterministic sample by line index).
 * @throws Error when the directory does not exist.
 */
export function loadTrajectories(dir = DEFAULT_TRAJECTORY_DIR, every = 1): RecordedTrajectory[] {
  if (!existsSync(dir)) throw new SandboxDataNotFoundError(`trajectory directory ${dir} not found (expected ../shared/trajectories)`, 'dir');
  const out: RecordedTrajectory[] = [];
  for (const f of readdirSync(dir).filter((x) => x.endsWith('.jsonl')).sort()) {
    const source = f.replace(/\.jsonl$/, '');
    const lines = readFileSync(resolve(dir, f), 'utf8').split('\n').filter(Boolean);
    lines.forEach((l, i) => {
      if (i % every !== 0) return;
      const t = JSON.parse(l) as { id: string; code_blocks: { code: string; recorded_output: string | null }[] };
      if (!t.code_blocks?.length) return;
      out.push({
        id: t.id,
        source,
        stateful: source.startsWith('mathcoder') || source.startsWith('mint'),
        blocks: t.code_blocks.map((b) => ({ code: b.code, recorded: b.recorded_output })),
      });
    });
  }
  return out;
}

// eslint-disable-next-line no-control-regex -- ANSI colour codes left in MathCoder's recorded tracebacks
const ANSI = /\x1b\[[0-9;]*m|\[[0-9;]*m(?=\S)/g;

/** Normalise paths, numpy scalar reprs, float formatting, whitespace (docs/design/sandbox.md: expect honest drift). */
export function normaliseOutput(s: string): string {
  return s
    .replace(ANSI, '')
    .replace(/np\.(?:float|int|uint|complex|bool_?)\d*\(([^()]*)\)/g, '$1')
    .replace(/File "[^"]*"/g, 'File "<path>"')
    .replace(/-?\d+\.\d+(?:e[-+]?\d+)?/gi, (m) => {
      const v = Number(m);
      return Number.isFinite(v) ? String(Number(v.toPrecision(6))) : m;
    })
    .replace(/(\d)\.0\b/g, '$1')
    .replace(/\s+/g, '');
}

function lastErrorLine(stderr: string): string {
  const lines = stderr.trim().split('\n').filter(Boolean);
  return lines[lines.length - 1] ?? '';
}

/** What our run would have shown in the source's harness (its own output conventions). */
export function renderAsSource(source: string, r: ExecResult): string {
  if (source.startsWith('tora')) {
    let out = r.stdout.trim();
    if (!out) out = r.status === 'ok' ? 'Done' : lastErrorLine(r.stderr);
    return out.length > 400 ? out.slice(0, 200) + '...' + out.slice(-200) : out;
  }
  return (r.stdout + (r.status === 'ok' ? '' : r.stderr)).trim();
}

function recordedAsPlain(source: string, rec: string): string {
  let s = rec;
  if (source.startsWith('mint')) s = s.replace(/^Out\[\d+\]: /gm, '').replace('[Executed Successfully with No Output]', '');
  if (source.startsWith('mathcoder')) s = s.replace('<empty_execution>', '');
  return s.replace(/\.\.\.\n\[Output Truncated\]$/, '').trim();
}

const ERR_RE = /Traceback|Error\b|Error:|Exception/;

/** Classify one replayed block against its recording. */
export function compareBlock(source: string, code: string, recorded: string | null, r: ExecResult): ReplayKind {
  if (recorded === null) return 'not_recorded';
  if (/wikipedia_search/.test(code)) return 'live_tool';
  const rec = recordedAsPlain(source, recorded);
  if (/Timeout waiting for reply|Timed Out|Timed out after/.test(rec)) return 'recorded_timeout';
  if (r.status === 'timeout') return 'our_timeout';
  const ours = renderAsSource(source, r);
  const a = normaliseOutput(ours);
  const b = normaliseOutput(rec);
  if (a === b) return 'same';
  // rStar-Math rounds float outputs to 4 decimals; MINT cuts long outputs at 2,000 characters.
  if (source.startsWith('mint') && recorded.endsWith('[Output Truncated]') && a.startsWith(b.slice(0, 200))) return 'same';
  if (source.startsWith('rstar') && normaliseOutput(ours.replace(/-?\d+\.\d{5,}/g, (m) => Number(m).toFixed(4))) === b) return 'same';
  // Set printing order differs between versions: same characters, different order.
  if (a.length === b.length && [...a].sort().join('') === [...b].sort().join('')) return 'same';
  const recErr = ERR_RE.test(rec);
  const ourErr = r.status !== 'ok';
  if (recErr && ourErr) return 'both_error';
  if (recErr !== ourErr) return 'error_mismatch';
  return 'differs';
}

/** Outcome of replaying a collection. */
export interface ReplayReport {
  blocks: number;
  counts: Record<ReplayKind, number>;
  /** Agreeing blocks / blocks with a comparable recording (not_recorded, live_tool excluded). */
  agreement: number;
  mismatches: { id: string; block: number; kind: ReplayKind; ours: string; recorded: string }[];
  wallMs: number;
}

/** The part of {@link SandboxPool} a replay needs. */
export interface ReplayExecutor {
  execute(req: { code: string; session?: string; timeoutMs?: number; outputChars?: number }): Promise<ExecResult>;
  endSession?(session: string): Promise<void>;
}

/**
 * Execute every block of `trajectories` as its source did (stateless, or one session per trajectory
 * for stateful sources, blocks in order), `concurrency` trajectories at a time, and compare.
 */
export async function replayTrajectories(
  pool: ReplayExecutor,
  trajectories: RecordedTrajectory[],
  opts: { concurrency?: number; timeoutMs?: number } = {},
): Promise<ReplayReport> {
  const counts = Object.fromEntries(
    (['same', 'both_error', 'not_recorded', 'recorded_timeout', 'our_timeout', 'live_tool', 'error_mismatch', 'after_session_reset', 'differs'] as const).map(
      (k) => [k, 0],
    ),
  ) as Record<ReplayKind, number>;
  const mismatches: ReplayReport['mismatches'] = [];
  let next = 0;
  let blocks = 0;
  const t0 = Date.now();
  const worker = async () => {
    for (;;) {
      const t = trajectories[next++];
      if (!t) return;
      const session = t.stateful ? `replay-${t.id}`.replace(/[^A-Za-z0-9_.:@-]/g, '_') : undefined;
      let lostState = false;
      for (let i = 0; i < t.blocks.length; i++) {
        const b = t.blocks[i]!;
        const r = await pool.execute({ code: b.code, session, timeoutMs: opts.timeoutMs ?? 6000, outputChars: 4000 });
        blocks++;
        let kind = compareBlock(t.source, b.code, b.recorded, r);
        // A cell after a session reset (our timeout) runs without the names earlier cells defined.
        if (lostState && !AGREEING.has(kind) && kind !== 'not_recorded') kind = 'after_session_reset';
        if (session && r.status !== 'ok' && r.sessionReset) lostState = true;
        counts[kind]++;
        if (!AGREEING.has(kind) && kind !== 'not_recorded')
          mismatches.push({ id: t.id, block: i, kind, ours: renderAsSource(t.source, r).slice(0, 300), recorded: (b.recorded ?? '').slice(0, 300) });
      }
      if (session) await pool.endSession?.(session);
    }
  };
  await Promise.all(Array.from({ length: opts.concurrency ?? 4 }, worker));
  const comparable = blocks - counts.not_recorded - counts.live_tool;
  return {
    blocks,
    counts,
    agreement: comparable ? (counts.same + counts.both_error) / comparable : 1,
    mismatches,
    wallMs: Date.now() - t0,
  };
}
