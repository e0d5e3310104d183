import { EVENT_CONTRACTS, type EventType } from '@rstar/contracts';
import { BUS_ROLES, type Principal } from './principals';

/** Where a deployment's events live: the JetStream stream and the subject prefix (defaults `RSTAR`, `rstar`). */
export interface BusScope {
  stream?: string;
  subjectPrefix?: string;
}

/** A NATS user's permissions, in nats-server's configuration terms. */
export interface NatsPermissions {
  publish: { allow: string[] };
  subscribe: { allow: string[] };
  /** May publish one reply to the reply subject of each request it received (a responder). */
  allowResponses: boolean;
}

/**
 * The inbox prefix of a principal's connection (`_INBOX_<principal>`): its request replies, publish acks
 * and pull-consumer deliveries arrive under it, and it may subscribe to nothing else, so one service
 * cannot read another's replies (the default `_INBOX.>` would be shared by everyone).
 */
export function inboxPrefixOf(principal: Principal): string {
  return `_INBOX_${principal.replace(/[^A-Za-z0-9]/g, '_')}`;
}

/** A contract subject (`rstar.run.started`) under a deployment's prefix (`<prefix>.run.started`). */
function busSubject(prefix: string, type: EventType): string {
  return prefix + EVENT_CONTRACTS[type].subject.slice('rstar'.length);
}

/**
 * The consumer filter subjects of a principal's subscriptions, as `JetStreamBus.subscribe` chooses them:
 * a one-type subscription filters on the type's subject, a several-type one (or the archiver's
 * catch-all) on the whole prefix.
 */
export function consumerFilters(principal: Principal, prefix: string): string[] {
  const role = BUS_ROLES[principal];
  const filters = role.subscriptions.map((types) => (types.length === 1 && !role.consumesAll ? busSubject(prefix, types[0]) : `${prefix}.>`));
  return [...new Set(filters)];
}

/**
 * A principal's NATS permissions, derived from {@link BUS_ROLES} and the contracts, so they cannot drift
 * from what the code publishes and consumes:
 * - publish: the subjects of the event types it produces; the JetStream API calls its bus makes
 *   (`$JS.API.INFO`, stream info, consumer info and pull requests on the stream, and consumer creation
 *   only through the filtered create subject `$JS.API.CONSUMER.CREATE.<stream>.<name>.<filter>` for the
 *   filters of what it consumes, so it cannot open a consumer on another service's events); acks
 *   (`$JS.ACK.<stream>.>`, the 2.10 form with domain and account hash too); stream create/update for the
 *   control plane only; core request subjects it calls.
 * - subscribe: its own inbox prefix ({@link inboxPrefixOf}) — events reach it only through its
 *   JetStream consumers, whose deliveries arrive there — plus the request subjects it answers.
 * Nothing else: no `$JS.API.>` wildcard, no stream delete or purge, no direct subscription to event
 * subjects.
 */
export function natsPermissions(principal: Principal, scope: BusScope = {}): NatsPermissions {
  const prefix = scope.subjectPrefix ?? 'rstar';
  const stream = scope.stream ?? 'RSTAR';
  const role = BUS_ROLES[principal];
  const publish = new Set<string>();
  for (const t of role.produces) publish.add(busSubject(prefix, t));
  publish.add('$JS.API.INFO');
  publish.add(`$JS.API.STREAM.INFO.${stream}`);
  if (role.manageStream) {
    publish.add(`$JS.API.STREAM.CREATE.${stream}`);
    publish.add(`$JS.API.STREAM.UPDATE.${stream}`);
  }
  if (role.subscriptions.length) {
    for (const f of consumerFilters(principal, prefix)) publish.add(`$JS.API.CONSUMER.CREATE.${stream}.*.${f}`);
    publish.add(`$JS.API.CONSUMER.MSG.NEXT.${stream}.*`);
    publish.add(`$JS.ACK.${stream}.>`);
    publish.add(`$JS.ACK.*.*.${stream}.>`);
  }
  // Consumer info: a subscription's lag and settings, and whether the pipeline's consumers exist yet.
  publish.add(`$JS.API.CONSUMER.INFO.${stream}.*`);
  for (const s of role.requests ?? []) publish.add(s);
  const subscribe = [`${inboxPrefixOf(principal)}.>`, ...(role.serves ?? [])];
  return { publish: { allow: [...publish] }, subscribe: { allow: subscribe }, allowResponses: (role.serves ?? []).length > 0 };
}
