import { JetStreamApiCodes, JetStreamApiError } from '@nats-io/jetstream';
import { RstarError } from '@rstar/contracts';

/**
 * True when a JetStream API call failed because the stream does not exist: matched by the server's API
 * error code (10059), which @nats-io/jetstream exposes as `JetStreamApiError.code`, never by message text.
 */
export function isStreamNotFound(e: unknown): boolean {
  return e instanceof JetStreamApiError && e.code === JetStreamApiCodes.StreamNotFound;
}

/** True when a JetStream API call failed because the consumer does not exist (API error code 10014). */
export function isConsumerNotFound(e: unknown): boolean {
  return e instanceof JetStreamApiError && e.code === JetStreamApiCodes.ConsumerNotFound;
}

/** A bus option that cannot work (code `invalid_bus_option`); `field` names the option, the message the fix. */
export class BusOptionError extends RstarError {
  declare readonly field: string;
  constructor(field: string, message: string) {
    super('invalid_bus_option', message, field);
  }
}

/** A wait on the bus (a consumer catching up) gave up after its timeout; the message says how far it got. */
export class BusWaitTimeoutError extends RstarError {
  constructor(message: string) {
    super('bus_wait_timeout', message);
  }
}
