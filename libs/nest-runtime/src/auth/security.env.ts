import { SECURITY_ENV_VARS, type SecurityEnvVar } from '@rstar/security';
import { z } from 'zod';

/**
 * The security settings every service accepts (all optional: none = the open dev mode), validated with
 * the other settings and documented by `SECURITY_ENV_VARS` of @rstar/security: NATS credentials and TLS,
 * the signing key, trusted keys, HTTP tokens, the engine token, `RSTAR_SECRETS_DIR` and
 * `RSTAR_REQUIRE_AUTH`. What the files hold is checked when the service module is built.
 */
export const securityEnv = z.object(
  Object.fromEntries(
    Object.entries(SECURITY_ENV_VARS).map(([name, what]) => [
      name,
      name === 'RSTAR_REQUIRE_AUTH'
        ? z.preprocess((v) => (v === '' ? undefined : v), z.enum(['true', 'false', '1', '0', 'yes', 'no', 'on', 'off']).optional()).describe('true or false')
        : z.preprocess((v) => (v === '' ? undefined : v), z.string().optional()).describe(what),
    ]),
  ) as unknown as { [K in SecurityEnvVar]: z.ZodType<string | undefined> },
);
