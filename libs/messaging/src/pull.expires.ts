/**
 * How long one pull request of a consumer stays open on the server, in ms (nats.js `consume({ expires })`;
 * its default is 30 000). The client expects an idle heartbeat every half of it and re-issues its pulls after
 * two missed ones. In a cluster a pull goes to the consumer's leader: when that node dies, the pull is lost
 * without a word and the client notices only by the missed heartbeats, so this bounds how long a consumer
 * stalls after a failover (30 s with the default; ~10 s with this). An idle consumer pays one pull request per
 * period and a heartbeat every half of it, a few small messages a second for all of a service's consumers.
 */
export const PULL_EXPIRES_MS = 5_000;
