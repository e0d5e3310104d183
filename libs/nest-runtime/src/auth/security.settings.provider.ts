import { ConfigService } from '@nestjs/config';
import { RstarError } from '@rstar/contracts';
import { SECURITY_ENV_VARS, securityFromEnv, type SecuritySettings } from '@rstar/security';
import { ServiceConfigError } from '../service-config';

/** Injection token of the service's {@link SecuritySettings} (credentials, signer, verifier, HTTP tokens). */
export const SECURITY_SETTINGS = Symbol('SECURITY_SETTINGS');

/**
 * The service's security settings from its validated configuration (`securityFromEnv` with the service
 * name as principal). A secret that cannot be read or parsed, or a missing one under `RSTAR_REQUIRE_AUTH`,
 * ends the start as a {@link ServiceConfigError} naming the variable (exit code 2).
 */
export function loadSecuritySettings(cfg: ConfigService, service: string): SecuritySettings {
  const env = Object.fromEntries(Object.keys(SECURITY_ENV_VARS).map((k) => [k, cfg.get<string>(k)]));
  try {
    return securityFromEnv(env, service);
  } catch (e) {
    if (e instanceof RstarError) throw new ServiceConfigError(`${service}: ${e.message}`, e.field ?? 'RSTAR_SECRETS_DIR');
    throw e;
  }
}
