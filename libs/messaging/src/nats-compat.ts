import * as transport from '@nats-io/transport-node';
import { connect } from '@nats-io/transport-node';

/*
 * @nats-io/nats-core 3.4 declares `"types": "./lib/mod.d.js"` and re-exports through the `./internal`
 * subpath, which TypeScript's node10 resolution (this repo's CommonJS setting) cannot follow, so the
 * re-exports of @nats-io/transport-node are invisible to the type checker though present at runtime.
 * The three helpers we use are typed here once.
 */

/** Message headers (the subset we use). */
export interface Headers {
  set(key: string, value: string): void;
  get(key: string): string;
}

/** A new empty header set (`headers()` of nats-core). */
export const natsHeaders: () => Headers = (transport as unknown as { headers: () => Headers }).headers;

/** Milliseconds to the nanoseconds JetStream's API expects. */
export const nanos = (ms: number): number => ms * 1_000_000;

/** The connection type `connect()` resolves to. */
export type NatsConnection = Awaited<ReturnType<typeof connect>>;
