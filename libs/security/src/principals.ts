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
  /**
   * The durable consumer names of its subscriptions, one per entry of `subscriptions` (same order).
   * `{instance}` stands for each replica's stable id (`RSTAR_INSTANCE_ID`, default `default`): such a
   * durable is per replica. Only these consumers may be read (`CONSUMER.MSG.NEXT`), acked and created
   * with its credentials, so no other principal can drain or ack them ({@link natsPermissions}).
   */
  durables: readonly string[];
  /**
   * Other principals' durables whose progress it reads (`CONSUMER.INFO` only: their existence before a
   * run starts, the archiver's ack floor before reading the archive). Info cannot take or ack a message.
   */
  watches?: readonly string[];
  /**
   * Names its own consumers freely (the operator's CLI: one per run it follows, e.g. `cli-<runId>`);
   * every durable a service owns stays denied to it.
   */
  ownsUnlistedDurables?: boolean;
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
    durables: ['archiver'],
    consumesAll: true,
    manageStream: true,
  },
  optimization: {
    produces: ['RunCompleted', 'RunFailed', 'StepStarted', 'RolloutRequested', 'RolloutDiscarded', 'StepOptimized', 'PolicyUpdated', 'StepCompleted', 'EvaluationCompleted', 'DeadLettered'],
    subscriptions: [['RunStarted'], ['RolloutCompleted', 'GroupResampled']],
    durables: ['optimization-runs', 'optimization-steps'],
    watches: ['archiver', 'tool-execution', 'reward-grading', 'resampling', 'policy-serving-rollouts'],
  },
  'policy-serving': {
    produces: ['TurnGenerated', 'ToolCallRequested', 'RolloutCompleted', 'DeadLettered'],
    subscriptions: [['RolloutRequested'], ['TurnGenerated'], ['ToolCallCompleted'], ['PolicyUpdated']],
    durables: ['policy-serving-rollouts', 'policy-serving-turns-{instance}', 'policy-serving-tool-results-{instance}', 'policy-serving-policy-{instance}'],
    requests: ['tool.execute'],
  },
  'tool-execution': {
    produces: ['ToolCallCompleted', 'DeadLettered'],
    subscriptions: [['ToolCallRequested']],
    durables: ['tool-execution'],
    serves: ['tool.execute'],
  },
  'reward-grading': {
    produces: ['RewardAssigned', 'DeadLettered'],
    subscriptions: [['RolloutCompleted']],
    durables: ['reward-grading'],
    requests: ['tool.execute'],
  },
  resampling: {
    produces: ['GroupResampled', 'DeadLettered'],
    subscriptions: [['RolloutRequested', 'RolloutCompleted', 'RewardAssigned', 'GroupResampled']],
    durables: ['resampling'],
    watches: ['archiver'],
  },
  cli: {
    produces: ['RunStarted', 'StepStarted', 'RolloutRequested', 'EvaluationCompleted', 'DeadLettered'],
    subscriptions: [['StepCompleted', 'RunCompleted', 'RunFailed', 'EvaluationCompleted']],
    durables: [],
    ownsUnlistedDurables: true,
    watches: ['optimization-runs', 'tool-execution', 'reward-grading', 'resampling', 'policy-serving-rollouts', 'archiver'],
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

/** Stable replica ids per principal (`RSTAR_INSTANCE_ID` of each replica); a principal not named has one, `default`. */
export type InstanceIds = Partial<Record<Principal, readonly string[]>>;

/**
 * The durable consumer names a principal owns ({@link BusRole.durables} with `{instance}` expanded for
 * each of its instance ids, default `['default']`).
 */
export function durablesOf(principal: Principal, instances: InstanceIds = {}): string[] {
  return [...new Set(BUS_ROLES[principal].durables.flatMap((d) => expandDurable(principal, d, instances)))];
}

/** One entry of {@link BusRole.durables} as the names it stands for (one per instance id when per replica). */
export function expandDurable(principal: Principal, pattern: string, instances: InstanceIds = {}): string[] {
  if (!pattern.includes('{instance}')) return [pattern];
  const ids = instances[principal]?.length ? instances[principal]! : ['default'];
  return ids.map((id) => pattern.replace('{instance}', id));
}

/** Which principal owns durable `name`, or null (an unlisted name: the CLI's, or nobody's). */
export function ownerOfDurable(name: string, instances: InstanceIds = {}): Principal | null {
  return PRINCIPALS.find((p) => durablesOf(p, instances).includes(name)) ?? null;
}
