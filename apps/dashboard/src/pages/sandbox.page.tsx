import { useEffect, useMemo } from 'react';
import { api, followRunLive } from '../api';
import { Loading, Stat } from '../components/bits';
import { Chart, type ChartOption } from '../components/chart';
import { RunNav, Section } from '../components/run-nav';
import { fmt } from '../format';
import { useLoad, useThrottled } from '../hooks';

/** The sandbox page: the run's tool calls per second, status mix and latency percentiles, refreshed as calls are archived. */
export function SandboxPage({ runId }: { runId: string }) {
  const stats = useLoad(() => api.sandbox(runId), [runId]);
  const refresh = useThrottled(stats.reload, 2000);
  useEffect(() => followRunLive(runId, null, (u) => u.toolCalls > 0 && refresh()), [runId, refresh]);
  const s = stats.data;
  const timeline = useMemo((): ChartOption | null => {
    if (!s) return null;
    const b = s.timeline.bucketS;
    return {
      animation: false,
      grid: { left: 52, right: 16, top: 36, bottom: 40 },
      legend: { top: 4 },
      tooltip: { trigger: 'axis' },
      xAxis: { type: 'category', data: s.timeline.points.map((p) => new Date(p.t).toLocaleTimeString()), axisLabel: { hideOverlap: true } },
      yAxis: { type: 'value', name: 'calls / s', nameLocation: 'middle', nameGap: 38, nameTextStyle: { fontSize: 10, color: '#64748b' } },
      series: [
        { name: 'calls / s', type: 'bar', barGap: '-100%', barMaxWidth: 28, data: s.timeline.points.map((p) => p.calls / b), itemStyle: { color: '#93c5fd' } },
        { name: 'failed calls / s', type: 'bar', barMaxWidth: 28, data: s.timeline.points.map((p) => p.errors / b), itemStyle: { color: '#dc2626' } },
      ],
    };
  }, [s]);
  const mix = useMemo((): ChartOption | null => {
    if (!s) return null;
    const entries = Object.entries(s.byStatus);
    return {
      animation: false,
      grid: { left: 110, right: 40, top: 10, bottom: 24 },
      tooltip: { trigger: 'item' },
      xAxis: { type: 'value', minInterval: 1 },
      yAxis: { type: 'category', data: entries.map(([k]) => k), inverse: true },
      series: [{ type: 'bar', data: entries.map(([k, v]) => ({ value: v, itemStyle: { color: k === 'ok' ? '#16a34a' : '#dc2626' } })), label: { show: true, position: 'right' }, barMaxWidth: 22 }],
    };
  }, [s]);
  return (
    <main>
      <RunNav runId={runId} current="sandbox" />
      <Loading error={stats.error} loading={stats.loading}>
        {s && (
          <>
            <div className="summary" data-testid="sandbox-summary">
              <Stat label="tool calls" value={s.calls} testId="sandbox-calls" />
              <Stat label="failed" value={s.calls - (s.byStatus.ok ?? 0)} />
              <Stat label="latency p50" value={fmt.ms(s.latencyMs.p50)} testId="sandbox-p50" />
              <Stat label="p90" value={fmt.ms(s.latencyMs.p90)} />
              <Stat label="p99" value={fmt.ms(s.latencyMs.p99)} />
              <Stat label="max" value={fmt.ms(s.latencyMs.max)} />
              <Stat label="mean" value={fmt.ms(s.latencyMs.mean)} />
            </div>
            <div className="charts two">
              <Section title={`Calls per second (buckets of ${s.timeline.bucketS} s)`} testId="sandbox-timeline">
                {timeline && <Chart option={timeline} height={260} label="tool calls per second over time" />}
              </Section>
              <Section title="Status mix" testId="sandbox-status">
                {mix && <Chart option={mix} height={260} label="tool calls by status" />}
                <ul className="sr-only">{Object.entries(s.byStatus).map(([k, v]) => <li key={k}>{k}: {v}</li>)}</ul>
              </Section>
            </div>
          </>
        )}
      </Loading>
    </main>
  );
}
