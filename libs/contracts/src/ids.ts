import { v7 as uuidv7 } from 'uuid';

/**
 * Deterministic ids (docs/design/architecture.md §3): ids derived from the run, so a retried handler re-emits the same
 * id and both JetStream's dedupe window (`Nats-Msg-Id`) and Postgres' unique key drop the copy.
 */
export const ids = {
  /** A new run id (UUIDv7, time-ordered). */
  newRun: (): string => uuidv7(),
  /** `group:<runId>:<step>:<promptIdx>` — one group per prompt per step. */
  group: (runId: string, step: number, promptIdx: number): string => `group:${runId}:${step}:${promptIdx}`,
  /** `rollout:<runId>:<step>:<promptIdx>:<sampleIdx>` */
  rollout: (runId: string, step: number, promptIdx: number, sampleIdx: number): string =>
    `rollout:${runId}:${step}:${promptIdx}:${sampleIdx}`,
  /** `call:<rolloutId>:<turn>:<index>` — the index-th tool call parsed in a turn. */
  toolCall: (rolloutId: string, turn: number, index: number): string => `call:${rolloutId}:${turn}:${index}`,
  /** Event id: `<Type>:<key>`; one event of a type per key. */
  event: (type: string, key: string): string => `${type}:${key}`,
};

/** Stream ids: the aggregate an event belongs to, ordered gap-free in the archive. */
export const streams = {
  run: (runId: string): string => `run-${runId}`,
  step: (runId: string, step: number): string => `step-${runId}-${step}`,
  rollout: (rolloutId: string): string => `rollout-${rolloutId}`,
  group: (groupId: string): string => `group-${groupId}`,
};

