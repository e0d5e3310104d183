import type { Command } from 'commander';
import { dirname, join, resolve } from 'node:path';
import type { RstarEvent } from '@rstar/contracts';
import { EventStore } from '@rstar/event-store';
import { ReadModels } from '@rstar/read-models';
import { connectRuntime } from '@rstar/runtime';
import {
  formatGroupTable, formatRerunComparison, formatRunSummary, formatStepTable, formatTimeouts, formatTranscript, formatVerifyReport, groupTable, indexRun, readHistory,
  rerunStep, rolloutTranscript, runSummary, stepRolloutVersions, stepTable, verifyRun, writeHistory, NotInRunError, type RolloutVersions, type ToolReexecutor,
} from '@rstar/replay';
import { EventStoreRunViews, RunViewNotFoundError } from '@rstar/run-views';
import { REPO_ROOT, SandboxPool } from '@rstar/sandbox';
import { builtinRetrainer, rerunStepStandalone, workerCheckpointChecker } from '@rstar/training';
import { checkArchiveIntegrity, formatIntegrity, type IntegrityReport } from '@rstar/replay';
import { openArchive } from '../archive.source';
import { CliInputError, RunEventsNotFoundError } from '../cli.errors';

interface SourceOptions {
  database?: string;
  dataDir?: string;
  schema?: string;
  history?: string;
}

function intFlag(v: string | undefined, flag: string): number | undefined {
  if (v === undefined) return undefined;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0) throw new CliInputError(`${flag} must be a non-negative integer, got "${v}"`);
  return n;
}

/**
 * Read every event of `runId`: from `--history FILE` (JSON lines), from Postgres (`--database URL` or
 * env RSTAR_DATABASE_URL), else from the standalone PGlite folder (`--data-dir`, default
 * `runs/<RUN>/events` as `rstar train` writes it).
 */
async function loadRun(runId: string, o: SourceOptions, onStore?: (store: EventStore) => Promise<void>): Promise<RstarEvent[]> {
  if (o.history) {
    const all = readHistory(o.history);
    const events = all.filter((e) => e.runId === runId);
    if (events.length === 0) {
      const runs = [...new Set(all.map((e) => e.runId))];
      throw new CliInputError(`no events of run "${runId}" in ${o.history}; ${runs.length ? `runs in this history: ${runs.slice(0, 10).join(', ')}${runs.length > 10 ? `, ... (${runs.length})` : ''}` : 'the file holds no events'}`);
    }
    return events;
  }
  const archive = await openArchive(o, runId);
  try {
    // A read-only role (the operator's) may not migrate: it reads a schema the owner keeps current.
    const store = await EventStore.connect({ connectionString: archive.url, schema: o.schema }).catch((e: { code?: string }) => {
      if (e.code !== '42501') throw e;
      return EventStore.connect({ connectionString: archive.url, schema: o.schema, migrate: false });
    });
    try {
      // A snapshot read: paging with the log's in-flight horizon would stop early while any transaction is open.
      const out: RstarEvent[] = await store.readRunSnapshot(runId);
      if (out.length === 0) throw new RunEventsNotFoundError(`no events of run "${runId}" in ${archive.where}; check the run id (rstar train prints it) and --data-dir/--database/--schema`);
      await onStore?.(store);
      return out;
    } finally {
      await store.close();
    }
  } finally {
    await archive.close();
  }
}

/**
 * `show` without `--rollout` on an archive: the summary, step and group tables from the read models
 * (brought up to date first: a no-op when control-plane's projector keeps them current; a standalone
 * run's folder gets its read models on first use). Same rows as replay's in-memory projections.
 */
async function showFromReadModels(runId: string, o: SourceOptions & { group?: string }, step: number | undefined): Promise<{ view: unknown; text: string }> {
  const archive = await openArchive(o, runId);
  try {
    await (await EventStore.connect({ connectionString: archive.url, schema: o.schema, maxConnections: 1 })).close();
    const rm = await ReadModels.open({ connectionString: archive.url, schema: o.schema, poolSize: archive.embedded ? 1 : 2 });
    let shown: Awaited<ReturnType<typeof rm.repository.stepTable>>;
    let rows: Awaited<ReturnType<typeof rm.repository.groupTable>>;
    try {
      await rm.projector().catchUp();
      const repo = rm.repository;
      const summary = await repo.runSummary(runId);
      if (!summary) throw new RunEventsNotFoundError(`no events of run "${runId}" in ${archive.where}; check the run id (rstar train prints it) and --data-dir/--database/--schema`);
      const steps = await repo.stepTable(runId);
      if (!o.group && step === undefined) {
        const timeouts = await repo.groupTable(runId, { dropped: 'timeout' });
        return { view: { summary, steps, timeouts }, text: withTimeouts(`${formatRunSummary(summary)}\n\n${formatStepTable(steps)}`, timeouts) };
      }
      if (step !== undefined && !steps.some((s) => s.step === step)) throw new NotInRunError('step', step, runId, steps.map((s) => s.step));
      rows = await repo.groupTable(runId, { step, groupId: o.group });
      if (o.group && !rows.length) throw new NotInRunError('group', o.group, runId, (await repo.groupTable(runId)).map((g) => g.groupId));
      const only = step ?? rows[0]?.step;
      shown = steps.filter((s) => only === undefined || s.step === only);
    } finally {
      await rm.close();
    }
    // The read models keep one version per rollout; the versions a partial rollout's turns name are read from the
    // archive, after the read models let go of it (an embedded archive takes one connection at a time).
    const store = await EventStore.connect({ connectionString: archive.url, schema: o.schema, maxConnections: 1, migrate: false });
    try {
      const versions = await archivedVersions(store, runId, shown.map((s) => s.step));
      return { view: { steps: shown, groups: rows, versions: Object.fromEntries(versions) }, text: `${formatStepTable(shown)}\n\n${formatGroupTable(rows, versions)}` };
    } finally {
      await store.close();
    }
  } finally {
    await archive.close();
  }
}

/**
 * The policy versions of every rollout of `steps` as the dashboard's step page reads them from the archive
 * (`EventStoreRunViews.step`: the versions a partial rollout's turns name, the trainer's version, the
 * staleness), keyed by rollout id; rollouts still running, and those of a step without StepStarted, are left out.
 */
async function archivedVersions(store: EventStore, runId: string, steps: readonly number[]): Promise<Map<string, RolloutVersions>> {
  const views = new EventStoreRunViews(store);
  const out = new Map<string, RolloutVersions>();
  for (const s of steps) {
    // A step the log holds groups of but no StepStarted (a truncated log): its rollouts print without versions.
    const d = await views.step(runId, s).catch((e: unknown) => {
      if (e instanceof RunViewNotFoundError) return null;
      throw e;
    });
    for (const r of d?.rollouts ?? []) {
      if (r.policyVersion === null || r.policyVersions === null) continue;
      out.set(r.rolloutId, {
        startedAt: r.policyVersion, versions: r.policyVersions, trainedAt: r.trainedAt, staleness: r.staleness, partial: r.policyVersions.length > 1, discarded: r.discarded,
      });
    }
  }
  return out;
}

/**
 * `rerun --standalone`: the step re-run in this process ({@link rerunStepStandalone}) on an in-process
 * bus, recorded in the archive the original came from (the Postgres of `--database`, or the run's
 * PGlite folder; in memory for `--history`), then the comparison printed. Exit code 0 only when every
 * deterministic outcome matches.
 */
async function rerunInProcess(runId: string, step: number, events: RstarEvent[], o: SourceOptions & { runId?: string; json?: boolean }): Promise<void> {
  const dataDir = o.history || o.database ? undefined : (o.dataDir ?? join(REPO_ROOT, 'runs', runId, 'events'));
  const runDir = o.dataDir ? dirname(resolve(o.dataDir)) : join(REPO_ROOT, 'runs', runId);
  const runtime = await connectRuntime({ natsUrl: '', databaseUrl: o.history ? '' : (o.database ?? ''), schema: o.schema, dataDir });
  try {
    const log = (l: string) => process.stderr.write(`rstar replay: ${l}\n`);
    const r = await rerunStepStandalone({ events, runId, step, newRunId: o.runId, runDir, runtime, onLine: log });
    process.stdout.write((o.json ? JSON.stringify({ runId: r.plan.runId, checkpoint: r.checkpoint, ...r.comparison }, null, 2) : formatRerunComparison(r.comparison)) + '\n');
    if (!o.history) log(`the rerun is recorded as run ${r.plan.runId}: \`rstar replay show ${r.plan.runId}\` with the same --data-dir/--database`);
    process.exitCode = r.comparison.ok ? 0 : 1;
  } finally {
    await runtime.close();
  }
}

/** `text` followed by the run's timed-out groups and why each timed out (nothing when none did). */
function withTimeouts(text: string, timeouts: Parameters<typeof formatTimeouts>[0]): string {
  const t = formatTimeouts(timeouts);
  return t ? `${text}\n\n${t}` : text;
}

function sources(cmd: Command): Command {
  return cmd
    .option('--database <url>', 'Postgres archive (default env RSTAR_DATABASE_URL)')
    .option('--data-dir <dir>', 'standalone PGlite archive (default runs/<RUN>/events)')
    .option('--schema <name>', 'event-store schema (default rstar)')
    .option('--history <file>', 'read the events from a JSON-lines history instead of an archive');
}

/**
 * `rstar replay show|verify|rerun RUN`: rebuild a recorded run from its events.
 * - `show RUN [--step N] [--group ID] [--rollout ID] [--json]`: run summary and step table; a step's
 *   group table; a group's table (from the read models of an archive, from the events of a `--history`),
 *   each rollout with the policy versions that sampled it, the trainer's version and its staleness;
 *   a rollout's transcript (turns, tool calls with code and output, reward and grader rule; from its events).
 * - `verify RUN [--step N] [--no-exec] [--trusted-keys FILE [--allow-unsealed]] [--json]`: check the
 *   archive's hash chain, the archiver's checkpoints and the id collisions recorded against the run (with
 *   trusted keys the run must be secured: every event signed by its producer, checkpoints signed by the
 *   archiver, the run sealed unless `--allow-unsealed`), then recompute every deterministic decision with
 *   today's code (rewards, RoC picks, batch hash, tool outputs); exit code 0 only when the archive holds and
 *   nothing deterministic differs.
 * - `rerun RUN --step N [--nats URL | --standalone] [--out FILE] [--json]`: re-publish the step's inputs
 *   under a new run id (RunStarted.rerunOf links it) to running services; or, with `--standalone` or
 *   without a NATS URL, run them in this process and compare with the original step (exit code 0 only
 *   when every deterministic outcome matches; an async step's rollouts each on the policy version that
 *   sampled them); or write them as JSON lines.
 * - `export RUN --out FILE`: the run's events as JSON lines.
 */
export function register(program: Command): void {
  const replay = program.command('replay').description('rebuild, verify and re-run recorded runs from the event log');

  sources(replay.command('show').argument('<run>', 'run id'))
    .description('show a run: summary and steps, or a step, group or rollout')
    .option('--step <n>', 'one step: its group table')
    .option('--group <id>', 'one group: rewards, penalties, kept and dropped')
    .option('--rollout <id>', 'one rollout: its transcript')
    .option('--json', 'print JSON')
    .action(async (runId: string, o: SourceOptions & { step?: string; group?: string; rollout?: string; json?: boolean }) => {
      const step = intFlag(o.step, '--step');
      if (!o.history && !o.rollout) {
        const { view, text } = await showFromReadModels(runId, o, step);
        process.stdout.write((o.json ? JSON.stringify(view, null, 2) : text) + '\n');
        return;
      }
      const ix = indexRun(await loadRun(runId, o), runId);
      let view: unknown;
      let text: string;
      if (o.rollout) {
        const t = rolloutTranscript(ix, o.rollout);
        [view, text] = [t, formatTranscript(t)];
      } else if (o.group || step !== undefined) {
        if (o.group && !ix.groups.has(o.group)) throw new NotInRunError('group', o.group, runId, [...ix.groups.keys()]);
        if (step !== undefined && !ix.steps.some((s) => s.step === step)) throw new NotInRunError('step', step, runId, ix.steps.map((s) => s.step));
        const rows = groupTable(ix, { step, groupId: o.group });
        const only = step ?? (o.group ? ix.groups.get(o.group)!.step : undefined);
        const steps = stepTable(ix).filter((s) => only === undefined || s.step === only);
        const versions = new Map(steps.flatMap((s) => [...stepRolloutVersions(ix, s.step)]));
        [view, text] = [{ steps, groups: rows, versions: Object.fromEntries(versions) }, `${formatStepTable(steps)}\n\n${formatGroupTable(rows, versions)}`];
      } else {
        const summary = runSummary(ix);
        const steps = stepTable(ix);
        const timeouts = groupTable(ix, { dropped: 'timeout' });
        [view, text] = [{ summary, steps, timeouts }, withTimeouts(`${formatRunSummary(summary)}\n\n${formatStepTable(steps)}`, timeouts)];
      }
      process.stdout.write((o.json ? JSON.stringify(view, null, 2) : text) + '\n');
    });

  sources(replay.command('verify').argument('<run>', 'run id'))
    .description("recompute every deterministic decision with today's code and report each difference")
    .option('--step <n>', 'only this step')
    .option('--no-exec', 'do not re-execute tool calls')
    .option('--retrain', 'built-in policy: re-train each step from its start checkpoint and compare the checkpoint hash')
    .option('--concurrency <n>', 'rollouts whose tool calls re-run in parallel', '8')
    .option(
      '--trusted-keys <file>',
      'the run is a secured one: every event must carry a valid signature of its producer and the archiver\'s signed checkpoints must cover and seal the chain (JSON {keyId: public key PEM}, e.g. trusted-keys.json of rstar security init)',
    )
    .option('--allow-unsealed', 'with --trusted-keys: accept a run that is not sealed yet (still in progress); without it an unsealed run fails')
    .option('--json', 'print the report as JSON')
    .action(async (runId: string, o: SourceOptions & { step?: string; exec: boolean; retrain?: boolean; concurrency: string; trustedKeys?: string; allowUnsealed?: boolean; json?: boolean }) => {
      const step = intFlag(o.step, '--step');
      if (o.allowUnsealed && !o.trustedKeys) throw new CliInputError('--allow-unsealed only applies with --trusted-keys (a run without them is not expected to be sealed): add --trusted-keys FILE or drop --allow-unsealed');
      const concurrency = Number(o.concurrency);
      if (!Number.isInteger(concurrency) || concurrency < 1) throw new CliInputError(`--concurrency must be a positive integer, got "${o.concurrency}"`);
      // The archive's own integrity first (a history file has no chain to check).
      let integrity: IntegrityReport | null = null;
      const events = await loadRun(runId, o, async (store) => {
        integrity = await checkArchiveIntegrity(store, runId, { trustedKeysFile: o.trustedKeys, allowUnsealed: o.allowUnsealed });
      });
      const checked = integrity as IntegrityReport | null;
      if (checked && !o.json) process.stdout.write(formatIntegrity(checked) + '\n');
      let pool: SandboxPool | null = null;
      let execute: ToolReexecutor | undefined;
      if (o.exec) {
        pool = new SandboxPool({ onWarning: (m) => process.stderr.write(`rstar replay: WARNING: ${m}\n`) });
        await pool.start();
        const p = pool;
        execute = async (c) => {
          const r = await p.execute({ code: c.code, input: c.input, timeoutMs: c.timeoutMs, memoryMb: c.memoryMb, session: c.session ?? undefined });
          return { status: r.status, stdout: r.stdout, stderr: r.stderr, truncated: r.truncated };
        };
      }
      try {
        const ix = indexRun(events, runId);
        const runDir = o.dataDir ? dirname(resolve(o.dataDir)) : join(REPO_ROOT, 'runs', runId);
        const retrain = o.retrain ? builtinRetrainer(ix, runDir) : undefined;
        // A run trained on the trainer worker: each step's batch file and checkpoint are re-checked against the log.
        const checkpoints = workerCheckpointChecker(ix);
        const report = await verifyRun(ix, { step, execute, concurrency, retrain, checkpoints });
        process.stdout.write((o.json ? JSON.stringify(checked ? { ...report, integrity: checked } : report, null, 2) : formatVerifyReport(report)) + '\n');
        process.exitCode = report.ok && (checked?.ok ?? true) ? 0 : 1;
      } finally {
        await pool?.close();
      }
    });

  sources(replay.command('export').argument('<run>', 'run id'))
    .description("write a run's events as JSON lines (a history for --history, or a golden fixture)")
    .requiredOption('--out <file>', 'output file')
    .action(async (runId: string, o: SourceOptions & { out: string }) => {
      const events = await loadRun(runId, o);
      if (events.length === 0) throw new RunEventsNotFoundError(`no events of run ${runId} in the archive`);
      writeHistory(o.out, events);
      process.stdout.write(`wrote ${events.length} events of run ${runId} to ${o.out}\n`);
    });

  sources(replay.command('rerun').argument('<run>', 'run id'))
    .description("re-run a recorded step's inputs under a new run id linked to the original: on the running services, or in this process (--standalone)")
    .requiredOption('--step <n>', 'the step to re-run')
    .option('--nats <url>', 'publish to the running services (default env RSTAR_NATS_URL)')
    .option('--standalone', 'run the step in this process (built-in engine, sandbox and every handler) and compare it with the original; the default without --nats/RSTAR_NATS_URL')
    .option('--out <file>', 'write the events as JSON lines instead of publishing')
    .option('--run-id <id>', 'id of the new run (default: a new UUIDv7)')
    .option('--stream <name>', 'JetStream stream (default RSTAR)')
    .option('--subject-prefix <prefix>', 'subject prefix (default rstar)')
    .option('--json', 'standalone: print the comparison as JSON')
    .action(async (runId: string, o: SourceOptions & { step: string; nats?: string; standalone?: boolean; out?: string; runId?: string; stream?: string; subjectPrefix?: string; json?: boolean }) => {
      const step = intFlag(o.step, '--step')!;
      const events = await loadRun(runId, o);
      const natsUrl = o.nats ?? (process.env.RSTAR_NATS_URL || undefined);
      const databaseUrl = o.database ?? (process.env.RSTAR_DATABASE_URL || undefined);
      if (!o.out && (o.standalone || !natsUrl)) {
        await rerunInProcess(runId, step, events, { ...o, database: databaseUrl });
        return;
      }
      const plan = rerunStep(indexRun(events, runId), { step, newRunId: o.runId, mode: o.out ? undefined : 'distributed' });
      const rollouts = plan.events.length - 2;
      if (o.out) {
        writeHistory(o.out, plan.events);
        process.stdout.write(`rerun ${plan.runId} of ${runId} step ${step}: ${rollouts} RolloutRequested written to ${o.out}\n`);
        for (const m of plan.multiVersion) process.stderr.write(`rstar replay: partial rollout ${m.originalRolloutId}: ${m.reason}\n`);
        return;
      }
      if (!databaseUrl) {
        throw new CliInputError('rerun on running services needs their archive: pass --database URL (or set RSTAR_DATABASE_URL) with --nats, --standalone to run the step in this process, or --out FILE to write the events');
      }
      const runtime = await connectRuntime({ natsUrl, databaseUrl, schema: o.schema, stream: o.stream, subjectPrefix: o.subjectPrefix, archive: false, name: 'rstar-replay' });
      try {
        await runtime.bus.publish(plan.events);
      } finally {
        await runtime.close();
      }
      process.stdout.write(`rerun ${plan.runId} of ${runId} step ${step}: published ${rollouts} RolloutRequested; watch it with \`rstar replay show ${plan.runId}\`\n`);
      if (plan.phases.length > 1) {
        // The running services serve whatever weights they hold: say that the step needs several.
        const versions = plan.phases.map((p) => `${p.rolloutIds.length} on version ${p.policyVersion}`).join(', ');
        process.stderr.write(`rstar replay: step ${step} was sampled on several policy versions (${versions}); the running services serve the weights they hold, so use --standalone to re-run each rollout on its own version\n`);
      }
      for (const m of plan.multiVersion) process.stderr.write(`rstar replay: partial rollout ${m.originalRolloutId}: ${m.reason}\n`);
    });

}
