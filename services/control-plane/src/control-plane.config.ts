import { baseServiceEnv, intVar, optionalVar, storeEnv } from '@rstar/nest-runtime';
import { z } from 'zod';

/** Default HTTP port of control-plane (README's port table). */
export const CONTROL_PLANE_PORT = 3000;

/**
 * control-plane's settings: the base ones (PORT default 3000, HOST, RSTAR_NATS_URL, RSTAR_STREAM,
 * RSTAR_SUBJECT_PREFIX), the archive (RSTAR_DATABASE_URL, required; RSTAR_DB_SCHEMA) and
 * RSTAR_ARCHIVER_ACK_WAIT_MS: how long the archiver's unacked batches wait before JetStream redelivers
 * them (after a crash, to the restarted control plane); default 30000, at least 1000.
 * The projector: RSTAR_PROJECTOR (`on` default, `off` where another replica projects),
 * RSTAR_PROJECTOR_BATCH (events per transaction, default 1000).
 * The Kafka export (docs/operations.md), on when RSTAR_KAFKA_BROKERS is set: RSTAR_KAFKA_TOPIC,
 * RSTAR_KAFKA_PARTITIONS, RSTAR_KAFKA_REPLICATION, RSTAR_KAFKA_CLIENT_ID, RSTAR_KAFKA_BATCH,
 * RSTAR_KAFKA_SSL (`1` for TLS), RSTAR_KAFKA_SASL_MECHANISM / _USERNAME / _PASSWORD.
 * The dashboard: RSTAR_LIVE_POLL_MS (live feed poll period, default 1000) and RSTAR_UI_DIR (built dashboard folder).
 */
export const controlPlaneEnv = baseServiceEnv(CONTROL_PLANE_PORT)
  .extend(storeEnv.shape)
  .extend({
    RSTAR_ARCHIVER_ACK_WAIT_MS: z.coerce.number().int().min(1000).default(30_000).describe('milliseconds, e.g. 30000'),
    RSTAR_PROJECTOR: z.enum(['on', 'off']).default('on').describe('on or off'),
    RSTAR_PROJECTOR_BATCH: intVar(1000, 1, 'events per projector transaction, e.g. 1000'),
    RSTAR_KAFKA_BROKERS: z
      .preprocess((v) => (v === '' ? undefined : v), z.string().regex(/^[^\s:/,]+:\d+(,[^\s:/,]+:\d+)*$/, 'must be host:port[,host:port...]').optional())
      .describe('the Kafka bootstrap servers, e.g. kafka-0:9092,kafka-1:9092 (unset: no export)'),
    RSTAR_KAFKA_TOPIC: z.string().regex(/^[A-Za-z0-9._-]{1,249}$/, 'must be 1-249 letters, digits, ".", "_" or "-"').default('rstar.events').describe('a Kafka topic name'),
    RSTAR_KAFKA_PARTITIONS: intVar(6, 1, 'partitions when the topic is created, e.g. 6'),
    RSTAR_KAFKA_REPLICATION: intVar(1, 1, 'replication factor when the topic is created, e.g. 3'),
    RSTAR_KAFKA_CLIENT_ID: z.string().min(1).default('rstar-control-plane').describe('a Kafka client id'),
    RSTAR_KAFKA_BATCH: intVar(500, 1, 'events per produce request, e.g. 500'),
    RSTAR_KAFKA_SSL: z.enum(['0', '1']).default('0').describe('1 for TLS to the brokers'),
    RSTAR_KAFKA_SASL_MECHANISM: z.preprocess((v) => (v === '' ? undefined : v), z.enum(['plain', 'scram-sha-256', 'scram-sha-512']).optional()).describe('plain, scram-sha-256 or scram-sha-512'),
    RSTAR_KAFKA_SASL_USERNAME: optionalVar('the SASL user name'),
    RSTAR_KAFKA_SASL_PASSWORD: optionalVar('the SASL password'),
    RSTAR_LIVE_POLL_MS: z.coerce.number().int().min(50).max(60_000).default(1000).describe('milliseconds between polls of the archive for the dashboard\'s live feed, e.g. 1000'),
    RSTAR_UI_DIR: z.string().default('').describe('folder of the built dashboard (default dist/apps/dashboard under the repository)'),
  });

export type ControlPlaneEnv = z.infer<typeof controlPlaneEnv>;
