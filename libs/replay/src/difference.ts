/** The decision a difference is about. */
export type DifferenceKind =
  | 'roc_selection'
  | 'roc_penalties'
  | 'roc_seed'
  | 'group_dropped'
  | 'group_inputs'
  | 'group_timeout'
  | 'group_refill'
  | 'reward'
  | 'reward_rule'
  | 'tool_output'
  | 'batch'
  | 'checkpoint_hash'
  | 'staleness'
  | 'missing_event';

/** One recomputed value that differs from the recording, with the event and field it concerns. */
export interface Difference {
  kind: DifferenceKind;
  /** True for a deterministic decision (fails `verify`); false for timing-dependent divergence. */
  deterministic: boolean;
  /** The recorded event whose field differs (`GroupResampled:<groupId>`, `RewardAssigned:<rolloutId>`, ...). */
  eventId: string;
  /** The field of that event's data (`kept`, `reward`, `stdout`, `batchHash`, `penalties.3.pErr`, ...). */
  field: string;
  step: number;
  groupId?: string;
  rolloutId?: string;
  callId?: string;
  recorded: unknown;
  recomputed: unknown;
  /** Machine-readable cause: `resampler_changed`, `grader_changed`, `timing_dependent`, `library_version`, `real_change`, ... */
  cause: string;
  /** One readable line: what differs and why. */
  message: string;
}
