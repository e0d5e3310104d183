import type { ReactNode } from 'react';

/** A run's or rollout's status as a coloured chip (text, not only colour). */
export function Chip({ kind, children, title }: { kind: string; children: ReactNode; title?: string }) {
  return <span className={`chip chip-${kind}`} title={title}>{children}</span>;
}

/** A label and its value, for summary strips. */
export function Stat({ label, value, testId }: { label: string; value: ReactNode; testId?: string }) {
  return (
    <div className="stat">
      <div className="stat-label">{label}</div>
      <div className="stat-value" data-testid={testId}>{value}</div>
    </div>
  );
}

/** A loading line or an error box, else the children. */
export function Loading({ error, loading, children }: { error: Error | null; loading: boolean; children?: ReactNode }) {
  if (error) return <div className="error" role="alert">{error.message}</div>;
  if (loading && !children) return <div className="muted" aria-busy="true">Loading…</div>;
  return <>{children}</>;
}

/** A green dot while a run is live. */
export function LiveDot({ on }: { on: boolean }) {
  return on ? <span className="live-dot" title="live: updates as events are archived" aria-label="live" /> : null;
}
