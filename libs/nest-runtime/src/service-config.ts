import { RstarError } from '@rstar/contracts';
import { z } from 'zod';
import { securityEnv } from './auth/security.env';

/**
 * A missing or bad service setting. `field` is the environment variable; the message says what was
 * found, what is expected and the fix. The one config error of every service.
 */
export class ServiceConfigError extends RstarError {
  declare readonly field: string;
  constructor(message: string, field: string) {
    super('invalid_service_config', message, field);
  }
}

/** A TCP port setting (`0` = any free port). */
export const portVar = (dflt: number) =>
  z.coerce.number().int().min(0).max(65_535).default(dflt).describe('a TCP port number (0..65535)');

/** An optional string setting: unset and empty both mean "not given". */
export const optionalVar = (fix: string) =>
  z.preprocess((v) => (v === '' ? undefined : v), z.string().optional()).describe(fix);

/** An integer setting with a lower bound. */
export const intVar = (dflt: number, min: number, fix: string) => z.coerce.number().int().min(min).default(dflt).describe(fix);

/**
 * The settings every service reads: `PORT`, `HOST` (default 127.0.0.1: a container or a cluster sets 0.0.0.0,
 * and a non-loopback `HOST` needs API tokens or `RSTAR_ALLOW_INSECURE=true`, see `checkExposure`), and the bus:
 * `RSTAR_NATS_URL` (comma-separated servers), `RSTAR_STREAM` / `RSTAR_SUBJECT_PREFIX` (isolation of several
 * deployments on one NATS), `RSTAR_STREAM_REPLICAS` (the stream's copies on a NATS cluster), `RSTAR_STREAM_MAX_BYTES` (its size
 * bound); and the optional security settings (`securityEnv`: credentials, keys, tokens).
 */
export const baseServiceEnv = (defaultPort: number) =>
  z
    .object({
      PORT: portVar(defaultPort),
      HOST: z.preprocess((v) => (v === '' ? undefined : v), z.string().min(1).default('127.0.0.1')).describe('the interface to listen on, e.g. 127.0.0.1 (this machine only) or 0.0.0.0 (every interface; needs API tokens)'),
      RSTAR_ALLOW_INSECURE: z
        .enum(['true', 'false'])
        .default('false')
        .describe('true only to serve an unauthenticated API beyond loopback on purpose (logged as an error); false'),
      RSTAR_NATS_URL: z.string().min(1).default('nats://127.0.0.1:4222').describe('the NATS server URL(s), comma-separated, e.g. nats://127.0.0.1:4222'),
      RSTAR_STREAM: optionalVar('the JetStream stream name (default RSTAR)'),
      RSTAR_SUBJECT_PREFIX: optionalVar('the subject prefix (default rstar)'),
      RSTAR_STREAM_REPLICAS: z
        .preprocess((v) => (v === '' ? undefined : v), z.coerce.number().int().min(1).max(5).optional())
        .describe('the copies of the stream on a NATS cluster, an integer 1..5 (3 on a 3-node cluster; unset on one server)'),
      RSTAR_STREAM_MAX_BYTES: z
        .preprocess((v) => (v === '' ? undefined : v), z.coerce.number().int().positive().optional())
        .describe('the stream\'s size bound in bytes, a positive integer (e.g. 150000000000; unset for no limit)'),
    })
    .extend(securityEnv.shape);

/** The archive settings of a service that reads or writes it. */
export const storeEnv = z.object({
  RSTAR_DATABASE_URL: z
    .string({ error: 'is not set' })
    .regex(/^postgres(ql)?:\/\//, 'must be a postgres:// URL')
    .describe('the Postgres archive, e.g. postgres://rstar:rstar@127.0.0.1:5432/rstar'),
  RSTAR_DB_SCHEMA: optionalVar('the event-store schema (default rstar), a lowercase identifier'),
  RSTAR_DB_MIGRATE: z
    .enum(['true', 'false'])
    .default('true')
    .describe('true (run the archive migrations at start) or false (a least-privilege role: only check the schema is current; run `rstar db migrate` as the owner)'),
});

/**
 * Validate `env` against `schema` and return the typed settings.
 * @throws ServiceConfigError for the first bad variable: its name, the problem, and the fix from the
 * field's `.describe()` text.
 */
export function parseServiceEnv<S extends z.ZodType>(schema: S, env: Record<string, string | undefined>): z.infer<S> {
  const r = schema.safeParse(env);
  if (r.success) return r.data;
  const issue = r.error.issues[0];
  const name = String(issue.path[0] ?? '(settings)');
  const raw = env[name];
  const fix = fieldDescription(schema, name);
  throw new ServiceConfigError(
    `${name} ${raw === undefined ? 'is not set' : `is "${raw}"`}: ${issue.message}${fix ? `; set it to ${fix}` : ''}`,
    name,
  );
}

function fieldDescription(schema: z.ZodType, name: string): string | undefined {
  const shape = (schema as unknown as { shape?: Record<string, z.ZodType> }).shape;
  return shape?.[name]?.description;
}
