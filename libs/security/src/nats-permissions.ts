import { EVENT_CONTRACTS, type EventType } from '@rstar/contracts';
import { BUS_ROLES, durablesOf, expandDurable, PRINCIPALS, type InstanceIds, type Principal } from './principals';

/** Where a deployment's events live: the JetStream stream and the subject prefix (defaults `RSTAR`, `rstar`). */
export interface BusScope {
  stream?: string;
  subjectPrefix?: string;
  /** Replica ids of the principals with per-replica durables (default: one replica, `default`). */
  instances?: InstanceIds;
}

/** A NATS user's permissions, in nats-server's configuration terms. */
export interface NatsPermissions {
  publish: { allow: string[]; deny?: string[] };
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
  return [...new Set(BUS_ROLES[principal].subscriptions.map((_, i) => consumerFilter(principal, i, prefix)))];
}

/** The filter subject of a principal's subscription `i` (see {@link consumerFilters}). */
function consumerFilter(principal: Principal, i: number, prefix: string): string {
  const role = BUS_ROLES[principal];
  const types = role.subscriptions[i];
  return types.length === 1 && !role.consumesAll ? busSubject(prefix, types[0]) : `${prefix}.>`;
}

/**
 * The JetStream API and ack subjects that act on one durable consumer: reading (`MSG.NEXT`), acking
 * (`$JS.ACK.<stream>.<durable>.>`, and the 2.10 form with domain and account hash) and its info.
 */
function consumerSubjects(stream: string, durable: string): { next: string; acks: string[]; info: string } {
  return {
    next: `$JS.API.CONSUMER.MSG.NEXT.${stream}.${durable}`,
    acks: [`$JS.ACK.${stream}.${durable}.>`, `$JS.ACK.*.*.${stream}.${durable}.>`],
    info: `$JS.API.CONSUMER.INFO.${stream}.${durable}`,
  };
}

/**
 * A principal's NATS permissions, derived from {@link BUS_ROLES} and the contracts, so they cannot drift
 * from what the code publishes and consumes:
 * - publish: the subjects of the event types it produces; the JetStream API calls its bus makes
 *   (`$JS.API.INFO`, stream info); for each durable it owns ({@link durablesOf}) and only those: its
 *   creation through the filtered create subject `$JS.API.CONSUMER.CREATE.<stream>.<durable>.<filter>`
 *   with the filter of that subscription, pull requests (`CONSUMER.MSG.NEXT`), acks and info; info of the
 *   durables it watches; stream create/update for the control plane only; core request subjects it calls.
 *   The operator's CLI may name its own consumers (one per run it follows) but every service's durable
 *   is denied to it. So no principal can drain, ack, re-create or change another's consumer.
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
  const deny: string[] = [];
  for (const t of role.produces) publish.add(busSubject(prefix, t));
  publish.add('$JS.API.INFO');
  publish.add(`$JS.API.STREAM.INFO.${stream}`);
  if (role.manageStream) {
    publish.add(`$JS.API.STREAM.CREATE.${stream}`);
    publish.add(`$JS.API.STREAM.UPDATE.${stream}`);
  }
  role.durables.forEach((pattern, i) => {
    for (const durable of expandDurable(principal, pattern, scope.instances)) {
      const c = consumerSubjects(stream, durable);
      publish.add(`$JS.API.CONSUMER.CREATE.${stream}.${durable}.${consumerFilter(principal, i, prefix)}`);
      publish.add(c.next);
      for (const a of c.acks) publish.add(a);
      publish.add(c.info);
    }
  });
  if (role.ownsUnlistedDurables) {
    for (const f of consumerFilters(principal, prefix)) publish.add(`$JS.API.CONSUMER.CREATE.${stream}.*.${f}`);
    const any = consumerSubjects(stream, '*');
    publish.add(any.next);
    for (const a of any.acks) publish.add(a);
    publish.add(any.info);
    // Every service's consumer stays out of reach (nats-server applies deny over allow).
    for (const other of PRINCIPALS) {
      if (other === principal) continue;
      for (const durable of durablesOf(other, scope.instances)) {
        const c = consumerSubjects(stream, durable);
        deny.push(`$JS.API.CONSUMER.CREATE.${stream}.${durable}.>`, c.next, ...c.acks);
        if (!(role.watches ?? []).includes(durable)) deny.push(c.info);
      }
    }
  }
  for (const durable of role.watches ?? []) publish.add(consumerSubjects(stream, durable).info);
  for (const s of role.requests ?? []) publish.add(s);
  const subscribe = [`${inboxPrefixOf(principal)}.>`, ...(role.serves ?? [])];
  return {
    publish: { allow: [...publish], ...(deny.length ? { deny } : {}) },
    subscribe: { allow: subscribe },
    allowResponses: (role.serves ?? []).length > 0,
  };
}
