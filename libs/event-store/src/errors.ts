import { RstarError } from '@rstar/contracts';

/** Base of event-store errors; `code` is machine-readable. */
export class EventStoreError extends RstarError {}

/** A bad option or argument (the message names the field and the fix). */
export class EventStoreConfigError extends EventStoreError {
  constructor(message: string, field: string) {
    super('invalid_store_option', message, field);
  }
}

/** A stored row no longer parses as an event (e.g. a type this code does not know). */
export class CorruptEventError extends EventStoreError {
  constructor(message: string, readonly globalPosition: number) {
    super('corrupt_event', message, 'data');
  }
}
