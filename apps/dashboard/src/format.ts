import type { RolloutBrief } from '@rstar/run-views';

/** Number formats of the pages: `-` for no value. */
export const fmt = {
  num: (v: number | null | undefined, digits = 3): string => (v === null || v === undefined || !Number.isFinite(v) ? '-' : Number.isInteger(v) ? String(v) : v.toFixed(digits)),
  pct: (v: number | null | undefined): string => (v === null || v === undefined ? '-' : `${(v * 100).toFixed(1)}%`),
  ms: (v: number | null | undefined): string => (v === null || v === undefined ? '-' : v >= 1000 ? `${(v / 1000).toFixed(2)} s` : `${v.toFixed(v < 10 ? 2 : 0)} ms`),
  time: (iso: string | null | undefined): string => (iso ? new Date(iso).toLocaleString(undefined, { dateStyle: 'short', timeStyle: 'medium' }) : '-'),
  shortId: (id: string): string => (id.length > 24 ? `${id.slice(0, 10)}…${id.slice(-10)}` : id),
  /**
   * A rollout's policy versions as the step page shows them: every version that sampled it, then the
   * trainer's version and the staleness, e.g. `v3→v4 · trained at v4 · staleness 1` (`discarded at` for a
   * stale rollout, `not trained yet` before its step trained, `-` while it runs).
   */
  versions: (r: Pick<RolloutBrief, 'policyVersion' | 'policyVersions' | 'trainedAt' | 'staleness' | 'discarded'>): string => {
    if (r.policyVersion === null) return '-';
    const sampled = (r.policyVersions ?? [r.policyVersion]).map((v) => `v${v}`).join('→');
    if (r.trainedAt === null) return `${sampled} · not trained yet`;
    return `${sampled} · ${r.discarded ? 'discarded' : 'trained'} at v${r.trainedAt} · staleness ${r.staleness ?? '-'}`;
  },
};
