import { useCallback, useEffect, useMemo, useRef, useState } from 'react';
import { stringify } from 'yaml';
import { api, followRunLive, type RolloutBrief, type RunDetailView, type RunLiveUpdate } from '../api';
import { Chip, LiveDot, Loading, Stat } from '../components/bits';
import { Chart } from '../components/chart';
import { RunNav, Section } from '../components/run-nav';
import { VirtualTable, type Column } from '../components/virtual-table';
import { fmt } from '../format';
import { useLoad, useThrottled } from '../hooks';
import { href } from '../router';
import { chartOption, hasData, RUN_CHARTS } from '../run-charts';
import type { StepMetricsRow } from '@rstar/run-views';

/** Apply a live update to the run page's data: steps replaced by number, evaluations added once, the run row replaced. */
export function mergeLive(d: RunDetailView, u: RunLiveUpdate): RunDetailView {
  const steps = new Map(d.steps.map((s) => [s.step, s]));
  for (const s of u.steps) steps.set(s.step, s);
  const rows = [...steps.values()].sort((a, b) => a.step - b.step);
  const stages = [] as RunDetailView['stages'];
  for (const r of rows) {
    const last = stages.at(-1);
    if (last && last.name === (r.stage ?? '?') && last.lastStep === r.step - 1) last.lastStep = r.step;
    else stages.push({ name: r.stage ?? '?', firstStep: r.step, lastStep: r.step });
  }
  const evalKey = (e: { name: string; afterStep: number }) => `${e.name}@${e.afterStep}`;
  const known = new Set(d.evaluations.map(evalKey));
  return { ...d, run: u.run, steps: rows, stages, evaluations: [...d.evaluations, ...u.evaluations.filter((e) => !known.has(evalKey(e)))], cursor: u.cursor };
}

const stepColumns = (runId: string): Column<StepMetricsRow>[] => [
  { header: 'step', width: '56px', align: 'right', cell: (r) => <a href={href.step(runId, r.step)} tabIndex={-1}>{r.step}</a> },
  { header: 'stage', width: '90px', cell: (r) => r.stage ?? '-' },
  { header: 'status', width: '96px', cell: (r) => <Chip kind={r.status}>{r.status}</Chip> },
  { header: 'policy', width: '60px', align: 'right', title: 'policy version the rollouts were sampled from', cell: (r) => (r.policyVersion === null ? '-' : `v${r.policyVersion}`) },
  { header: 'reward', width: '70px', align: 'right', cell: (r) => fmt.num(r.metrics.rewardMean) },
  { header: 'pass', width: '64px', align: 'right', cell: (r) => fmt.pct(r.metrics.passRate) },
  { header: 'tool err +', width: '78px', align: 'right', title: 'tool-error ratio in positive (reward 1) rollouts', cell: (r) => fmt.num(r.metrics.toolErrorRatioPositive) },
  { header: 'tool err', width: '70px', align: 'right', title: 'tool-error ratio in all rollouts', cell: (r) => fmt.num(r.metrics.toolErrorRatioAll) },
  { header: 'length', width: '64px', align: 'right', title: 'mean response tokens', cell: (r) => fmt.num(r.metrics.responseLengthMean, 1) },
  { header: 'dropped', width: '70px', align: 'right', title: 'share of groups dropped (all rewards equal, or timed out)', cell: (r) => fmt.num(r.metrics.droppedGroupShare, 2) },
  { header: 'loss', width: '76px', align: 'right', cell: (r) => fmt.num(r.metrics.loss, 4) },
  { header: 'clip', width: '64px', align: 'right', cell: (r) => fmt.num(r.metrics.clipFraction) },
  { header: 'KL', width: '70px', align: 'right', title: 'approximate KL between sampling and updated policy', cell: (r) => fmt.num(r.metrics.approxKl, 4) },
  { header: 'time', width: '1fr', align: 'right', cell: (r) => fmt.ms(r.metrics.timeStepMs) },
];

/** The run page: summary, curves, step table, run-wide rollouts and config, following the run live. */
export function RunPage({ runId, tab }: { runId: string; tab: 'overview' | 'steps' | 'rollouts' | 'config' }) {
  const detail = useLoad(() => api.run(runId), [runId]);
  const { setData } = detail;
  const [liveTick, setLiveTick] = useState(0);
  const cursor = useRef<string | null>(null);
  cursor.current = detail.data?.cursor ?? null;
  const loaded = detail.data !== null;
  // Follow from the cursor of the first load (a reconnecting EventSource resumes from its last event id),
  // also after RunCompleted: the held-out evaluation after RL is recorded after it.
  useEffect(() => {
    if (!loaded || !cursor.current) return;
    return followRunLive(runId, cursor.current, (u) => {
      setData((d) => (d ? mergeLive(d, u) : d));
      if (u.rollouts.length) setLiveTick((t) => t + 1);
    });
  }, [runId, loaded, setData]);
  const d = detail.data;
  return (
    <main>
      <RunNav runId={runId} current={tab} />
      <Loading error={detail.error} loading={detail.loading}>
        {d && (
          <>
            <RunSummary d={d} />
            {tab === 'overview' && <Overview d={d} />}
            {tab === 'steps' && <StepTable d={d} runId={runId} height="calc(100vh - 300px)" />}
            {tab === 'rollouts' && <RunRollouts runId={runId} liveTick={liveTick} />}
            {tab === 'config' && (
              <Section title="Config" testId="config">
                <pre className="config">{d.config ? stringify(d.config) : '(no RunStarted recorded)'}</pre>
              </Section>
            )}
          </>
        )}
      </Loading>
    </main>
  );
}

function RunSummary({ d }: { d: RunDetailView }) {
  const r = d.run;
  const last = d.steps.filter((s) => s.status === 'completed').at(-1);
  return (
    <div className="summary" data-testid="run-summary">
      <Stat label="status" value={<><Chip kind={r.status}>{r.status}</Chip> <LiveDot on={r.status === 'running'} /></>} testId="run-status" />
      <Stat label="preset" value={r.preset ?? '-'} />
      <Stat label="stage" value={r.stage ?? '-'} />
      <Stat label="step (0-based)" value={`${r.step ?? '-'}${r.totalSteps ? ` of 0–${r.totalSteps - 1}` : ''}`} testId="run-step" />
      <Stat label="last reward" value={fmt.num(last?.metrics.rewardMean ?? null)} testId="run-reward" />
      <Stat label="last pass rate" value={fmt.pct(last?.metrics.passRate ?? null)} />
      <Stat label="held-out pass@1" value={d.evaluations.length ? d.evaluations.map((e) => fmt.pct(e.passAt1)).join(' → ') : '-'} testId="run-heldout" />
      <Stat label="mode · seed" value={`${r.mode ?? '-'} · ${r.seed ?? '-'}`} />
      <Stat label="started" value={fmt.time(r.startedAt)} />
      <Stat label="finished" value={fmt.time(r.finishedAt)} />
      {r.error && <div className="error" role="alert">run failed: {r.error}</div>}
      {r.rerunOf && <div className="note">re-run of <a href={href.step(r.rerunOf.runId, r.rerunOf.step)}>{r.rerunOf.runId} step {r.rerunOf.step}</a></div>}
    </div>
  );
}

function Overview({ d }: { d: RunDetailView }) {
  const [smoothing, setSmoothing] = useState(0);
  const drawn = useMemo(() => RUN_CHARTS.filter((c) => hasData(c, d.steps) || (c.heldOut && d.evaluations.length > 0) || d.steps.every((r) => r.status !== 'completed')), [d.steps, d.evaluations]);
  const missing = RUN_CHARTS.filter((c) => !drawn.includes(c));
  const options = useMemo(() => drawn.map((c) => ({ c, option: chartOption(c, d.steps, d.stages, d.evaluations, smoothing) })), [drawn, d.steps, d.stages, d.evaluations, smoothing]);
  return (
    <>
      <Section
        title="Curves"
        testId="curves"
        aside={
          <label className="smoothing">
            smoothing <input type="range" min={0} max={0.95} step={0.05} value={smoothing} onChange={(e) => setSmoothing(Number(e.target.value))} aria-label="smoothing (exponential moving average weight)" />
            <output>{smoothing.toFixed(2)}</output>
          </label>
        }
      >
        <div className="charts">
          {options.map(({ c, option }) => (
            <figure key={c.id} className="chart-card" data-testid={`chart-${c.id}`}>
              <figcaption>{c.title}</figcaption>
              <Chart option={option} label={`${c.title} per step`} />
            </figure>
          ))}
        </div>
        {missing.length > 0 && <p className="muted" data-testid="charts-missing">Not recorded by this run: {missing.map((c) => c.title.toLowerCase()).join(', ')}.</p>}
        {d.evaluations.length > 0 && (
          <table className="plain" data-testid="evaluations">
            <caption>Held-out evaluations (pass@1 = mean correctness over the samples of each prompt)</caption>
            <thead><tr><th>evaluation</th><th className="num">after steps</th><th className="num">policy</th><th className="num">pass@1</th><th className="num">prompts × samples</th></tr></thead>
            <tbody>
              {d.evaluations.map((e) => (
                <tr key={`${e.name}@${e.afterStep}`}><td>{e.name}</td><td className="num">{e.afterStep}</td><td className="num">v{e.policyVersion}</td><td className="num">{fmt.pct(e.passAt1)}</td><td className="num">{e.prompts} × {e.samples}</td></tr>
              ))}
            </tbody>
          </table>
        )}
      </Section>
      <StepTable d={d} runId={d.run.runId} height={Math.min(420, 36 + d.steps.length * 30)} />
    </>
  );
}

function StepTable({ d, runId, height }: { d: RunDetailView; runId: string; height: number | string }) {
  const cols = useMemo(() => stepColumns(runId), [runId]);
  return (
    <Section title={`Steps (${d.steps.length})`} testId="steps">
      <VirtualTable
        label="steps"
        testId="step-table"
        columns={cols}
        rowCount={d.steps.length}
        row={(i) => d.steps[i]}
        rowKey={(r, i) => String(r?.step ?? i)}
        onOpen={(r) => (window.location.hash = href.step(runId, r.step))}
        height={height}
      />
    </Section>
  );
}

const PAGE = 100;

const rolloutColumns = (runId: string): Column<RolloutBrief>[] => [
  { header: 'rollout', width: 'minmax(240px, 2fr)', cell: (r) => <a href={href.rollout(runId, r.rolloutId)} className="mono" tabIndex={-1}>{r.rolloutId}</a> },
  { header: 'step', width: '56px', align: 'right', cell: (r) => r.step },
  { header: 'prompt', width: '64px', align: 'right', cell: (r) => r.promptIdx },
  { header: 'sample', width: '64px', align: 'right', cell: (r) => r.sampleIdx },
  { header: 'reward', width: '70px', align: 'right', cell: (r) => <Chip kind={r.correct ? 'ok' : 'bad'}>{fmt.num(r.reward)}</Chip> },
  { header: 'rule', width: '110px', cell: (r) => r.rule ?? '-' },
  { header: 'tool calls', width: '80px', align: 'right', cell: (r) => (r.toolCalls === null ? '-' : `${r.toolCalls}${r.toolErrors ? ` (${r.toolErrors} err)` : ''}`) },
  { header: 'tokens', width: '70px', align: 'right', cell: (r) => fmt.num(r.responseTokens) },
  { header: 'RoC', width: '80px', cell: (r) => <Chip kind={r.status}>{r.status}</Chip> },
];

/** Every graded rollout of the run, loaded a page at a time as the list scrolls. */
function RunRollouts({ runId, liveTick }: { runId: string; liveTick: number }) {
  const [outcome, setOutcome] = useState<'all' | 'correct' | 'wrong'>('all');
  const [total, setTotal] = useState<number | null>(null);
  const [pages, setPages] = useState<Map<number, RolloutBrief[]>>(new Map());
  const [error, setError] = useState<Error | null>(null);
  const asked = useRef(new Set<number>());
  const load = useCallback(
    (p: number, force = false) => {
      if (asked.current.has(p) && !force) return;
      asked.current.add(p);
      api.rollouts(runId, { offset: p * PAGE, limit: PAGE, outcome }).then(
        (page) => {
          setTotal(page.total);
          setPages((m) => new Map(m).set(p, page.items));
        },
        (e: Error) => setError(e),
      );
    },
    [runId, outcome],
  );
  useEffect(() => {
    asked.current = new Set();
    setPages(new Map());
    setTotal(null);
    load(0);
  }, [load]);
  const refreshTail = useThrottled(() => {
    if (total === null) return;
    load(Math.floor(total / PAGE), true);
  }, 1000);
  useEffect(() => {
    if (liveTick) refreshTail();
  }, [liveTick, refreshTail]);
  const onRange = useCallback((first: number, last: number) => {
    for (let p = Math.floor(first / PAGE); p <= Math.floor(last / PAGE); p++) load(p);
  }, [load]);
  const cols = useMemo(() => rolloutColumns(runId), [runId]);
  return (
    <Section
      title={`Rollouts (${total ?? '…'})`}
      testId="run-rollouts"
      aside={
        <div className="filters" role="group" aria-label="filter by outcome">
          {(['all', 'correct', 'wrong'] as const).map((o) => (
            <button key={o} className={o === outcome ? 'filter active' : 'filter'} aria-pressed={o === outcome} onClick={() => setOutcome(o)}>{o}</button>
          ))}
        </div>
      }
    >
      {error && <div className="error" role="alert">{error.message}</div>}
      <VirtualTable
        label="rollouts of the run"
        testId="rollout-list"
        columns={cols}
        rowCount={total ?? 0}
        row={(i) => pages.get(Math.floor(i / PAGE))?.[i % PAGE] ?? null}
        rowKey={(r, i) => r?.rolloutId ?? `row-${i}`}
        onOpen={(r) => (window.location.hash = href.rollout(runId, r.rolloutId))}
        onRange={onRange}
        rowClass={(r) => (r.correct ? 'row-ok' : '')}
        height="calc(100vh - 330px)"
      />
    </Section>
  );
}
