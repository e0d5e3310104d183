import type {
  Page, ReplayView, RolloutBrief, RolloutDetailView, RunDetailView, RunListItem, RunLiveUpdate, SandboxStatsView, StepDetailView,
} from '@rstar/run-views';

export type { Page, ReplayView, RolloutBrief, RolloutDetailView, RunDetailView, RunListItem, RunLiveUpdate, SandboxStatsView, StepDetailView };

/** An API answer other than 2xx: status, machine code and the server's message (which names the field). */
export class ApiError extends Error {
  constructor(readonly status: number, readonly code: string | null, readonly field: string | null, message: string) {
    super(message);
  }
}

const enc = encodeURIComponent;

async function get<T>(path: string): Promise<T> {
  const r = await fetch(`/v1/views/${path}`, { headers: { accept: 'application/json' } });
  if (!r.ok) {
    const body = await r.json().catch(() => ({}) as Record<string, unknown>);
    throw new ApiError(r.status, (body.code as string) ?? null, (body.field as string) ?? null, (body.message as string) ?? `${r.status} ${r.statusText}`);
  }
  return (await r.json()) as T;
}

/** The dashboard's reads of control-plane's `/v1/views` (shapes from @rstar/run-views). */
export const api = {
  runs: () => get<{ runs: RunListItem[] }>('runs'),
  run: (id: string) => get<RunDetailView>(`runs/${enc(id)}`),
  step: (id: string, step: number) => get<StepDetailView>(`runs/${enc(id)}/steps/${step}`),
  rollouts: (id: string, q: { offset: number; limit: number; outcome?: string; step?: number }) =>
    get<Page<RolloutBrief>>(`runs/${enc(id)}/rollouts?offset=${q.offset}&limit=${q.limit}${q.outcome ? `&outcome=${q.outcome}` : ''}${q.step !== undefined ? `&step=${q.step}` : ''}`),
  rollout: (id: string, rolloutId: string) => get<RolloutDetailView>(`runs/${enc(id)}/rollouts/${enc(rolloutId)}`),
  replay: (id: string, step?: number) => get<ReplayView>(`runs/${enc(id)}/replay${step !== undefined ? `?step=${step}` : ''}`),
  sandbox: (id: string) => get<SandboxStatsView>(`runs/${enc(id)}/sandbox`),
};

/**
 * Follow server-sent events of control-plane's `/v1/live`: `onEvent(type, data)` per event; the browser
 * reconnects by itself (resuming from the last event id). Returns the close function.
 */
export function live(path: string, onEvent: (type: string, data: unknown) => void, types: string[]): () => void {
  const es = new EventSource(`/v1/live/${path}`);
  for (const t of types) es.addEventListener(t, (m) => onEvent(t, JSON.parse((m as MessageEvent).data)));
  return () => es.close();
}

export const followRunsLive = (onRuns: (runs: RunListItem[]) => void) => live('runs', (_t, d) => onRuns((d as { runs: RunListItem[] }).runs), ['runs']);
/** Follow a run from `cursor` (null: from what is archived now). */
export const followRunLive = (id: string, cursor: string | null, onUpdate: (u: RunLiveUpdate) => void) =>
  live(`runs/${enc(id)}${cursor ? `?cursor=${enc(cursor)}` : ''}`, (_t, d) => onUpdate(d as RunLiveUpdate), ['update']);
