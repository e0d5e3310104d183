import { EVENT_CONTRACTS, EVENT_TYPES, type EventType } from '@rstar/contracts';

/** The prefix every contract subject starts with (`rstar.run.started`). */
export const CONTRACT_PREFIX = 'rstar';

/**
 * Map a contract subject to a bus prefix: `rstar.run.started` -> `<prefix>.run.started`. A prefix other
 * than `rstar` lets tests share one NATS server without seeing each other's events.
 */
export function toBusSubject(prefix: string, contractSubject: string): string {
  if (contractSubject === CONTRACT_PREFIX || contractSubject.startsWith(CONTRACT_PREFIX + '.')) {
    return prefix + contractSubject.slice(CONTRACT_PREFIX.length);
  }
  return `${prefix}.${contractSubject}`;
}

/** Inverse of {@link toBusSubject}: `<prefix>.run.started` -> `rstar.run.started`. */
export function toContractSubject(prefix: string, busSubject: string): string {
  return busSubject.startsWith(prefix + '.') ? CONTRACT_PREFIX + busSubject.slice(prefix.length) : busSubject;
}

/** Bus subject of an event type. */
export function busSubjectOf(prefix: string, type: EventType): string {
  return toBusSubject(prefix, EVENT_CONTRACTS[type].subject);
}

/** Every contract type, for subscribers that want everything (the archiver). */
export const ALL_EVENT_TYPES: readonly EventType[] = EVENT_TYPES;
