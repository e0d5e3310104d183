import { EVENT_TYPES, type EventType } from '@rstar/contracts';

/**
 * Who talks on the bus: the six services and the operator's CLI. Each is one NATS user, one Ed25519
 * signing key (its key id is the principal's name) and, in Postgres, at most one role.
 */
export const PRINCIPALS = ['control-plane', 'optimization', 'policy-serving', 'tool-execution', 'reward-grading', 'resampling', 'cli'] as const;
export type Principal = (typeof PRINCIPALS)[number];

/** What one principal does on the bus. */
export interface BusRole {
  /** Event types it publishes (its NATS publish permission and the types its signature may cover). */
  produces: readonly EventType[];
  /**
   * Its subscriptions, each the event types one durable consumer receives. One type = a consumer filtered
   * on that subject; several = a consumer on the whole prefix (nats-server 2.9 allows one filter subject
   * per consumer), filtered client-side (`JetStreamBus.subscribe`).
   */
  subscriptions: ReadonlyArray<readonly EventType[]>;
  /** Consumes every subject under the prefix, including ones no contract names (the archiver). */
  consumesAll?: boolean;
  /** Creates and updates the stream (only the control plane; everyone else finds it there). */
  manageStream?: boolean;
  /** Core-NATS request subjects it sends requests to (not prefixed). */
  requests?: readonly string[];
  /** Core-NATS request subjects it answers (it may publish to the requesters' reply inboxes). */
  serves?: readonly string[];
}

/**
 * The producer/consumer table of the event contracts (docs/design/architecture.md §3's producer column, as the code
 * publishes today). NATS permissions, the event-signature policy and the tests derive from it, so they
 * cannot drift from libs/contracts: a contract type that no principal produces fails the unit test.
 *
 * Two places where the code departs from the architecture table: runs are submitted by the operator's
 * CLI (`rstar train --remote`, `rstar replay rerun`), which publishes `RunStarted` (and, for a rerun, the
 * step's `StepStarted` and `RolloutRequested`) — the control plane has no submit route yet but keeps the
 * right to publish `RunStarted`; and `RunFailed` is also published by the optimization service's run
 * launcher; `EvaluationCompleted` (held-out pass@1) comes from whichever process ran the evaluation, the
 * optimization service or the operator's `rstar train`. Every principal that consumes may publish
 * `DeadLettered` (a consumer dead-letters what it cannot handle).
 */
export const BUS_ROLES: Readonly<Record<Principal, BusRole>> = {
  'control-plane': {
    produces: ['RunStarted', 'RunCompleted', 'RunFailed', 'DeadLettered'],
    subscriptions: [EVENT_TYPES],
    consumesAll: true,
    manageStream: true,
  },
  optimization: {
    produces: ['RunCompleted', 'RunFailed', 'StepStarted', 'RolloutRequested', 'StepOptimized', 'PolicyUpdated', 'StepCompleted', 'EvaluationCompleted', 'DeadLettered'],
    subscriptions: [['RunStarted'], ['RolloutCompleted', 'GroupResampled']],
  },
  'policy-serving': {
    produces: ['TurnGenerated', 'ToolCallRequested', 'RolloutCompleted', 'DeadLettered'],
    subscriptions: [['RolloutRequested'], ['TurnGenerated'], ['ToolCallCompleted'], ['PolicyUpdated']],
    requests: ['tool.execute'],
  },
  'tool-execution': {
    produces: ['ToolCallCompleted', 'DeadLettered'],
    subscriptions: [['ToolCallRequested']],
    serves: ['tool.execute'],
  },
  'reward-grading': {
    produces: ['RewardAssigned', 'DeadLettered'],
    subscriptions: [['RolloutCompleted']],
    requests: ['tool.execute'],
  },
  resampling: {
    produces: ['GroupResampled', 'DeadLettered'],
    subscriptions: [['RolloutRequested', 'RolloutCompleted', 'RewardAssigned', 'GroupResampled']],
  },
  cli: {
    produces: ['RunStarted', 'StepStarted', 'RolloutRequested', 'EvaluationCompleted', 'DeadLettered'],
    subscriptions: [['StepCompleted', 'RunCompleted', 'RunFailed', 'EvaluationCompleted']],
  },
};

/** True when `name` is a principal. */
export function isPrincipal(name: string): name is Principal {
  return (PRINCIPALS as readonly string[]).includes(name);
}

/** The principals allowed to produce `type`. */
export function producersOf(type: EventType): Principal[] {
  return PRINCIPALS.filter((p) => BUS_ROLES[p].produces.includes(type));
}

/** Every event type a principal consumes (over all its subscriptions). */
export function consumedBy(principal: Principal): EventType[] {
  return [...new Set(BUS_ROLES[principal].subscriptions.flat())];
}
