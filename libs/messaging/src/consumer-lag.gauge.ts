import { gauge } from '@rstar/telemetry';

/**
 * `rstar_consumer_lag{consumer}`: messages published but not yet acked, per durable consumer. One
 * definition for both buses (JetStream's subscriptions and the in-process bus) so the metric's help and
 * labels never drift; prom-client returns the registered gauge on every call after the first.
 */
export const consumerLagGauge = () => gauge('rstar_consumer_lag', 'Messages published but not yet acked, per durable consumer', ['consumer']);
