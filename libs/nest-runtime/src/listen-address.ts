import { isIP } from 'node:net';
import { isLoopbackHost } from '@rstar/security';
import type { Logger } from '@rstar/telemetry';
import { ServiceConfigError } from './service-config';

/** Whether exposing the HTTP API on `host` is allowed: the settings {@link checkExposure} reads. */
export interface ExposureSettings {
  service: string;
  /** The `HOST` the service will listen on. */
  host: string;
  /** How many bearer tokens the HTTP API accepts (0 = every route open). */
  apiTokens: number;
  /** `RSTAR_ALLOW_INSECURE=true`: the operator's explicit override. */
  allowInsecure: boolean;
}

/**
 * Fail closed on a reachable, open API: a service listening beyond loopback (`HOST` not 127.0.0.1/::1)
 * without API tokens would give anyone on the network its routes (tool-execution's are remote code
 * execution). That start is refused unless `RSTAR_ALLOW_INSECURE=true`, which is logged as an error on
 * every start so it cannot go unnoticed.
 * @throws ServiceConfigError (field `HOST`) naming the three ways out.
 */
export function checkExposure(s: ExposureSettings, log: Logger): void {
  if (isLoopbackHost(s.host) || s.apiTokens > 0) return;
  if (s.allowInsecure) {
    log.error(
      `INSECURE: ${s.service} listens on ${s.host} with HTTP authentication off (RSTAR_ALLOW_INSECURE=true): anyone who can reach this address can call every route. Set RSTAR_API_TOKENS_FILE (or RSTAR_SECRETS_DIR) instead.`,
      { field: 'RSTAR_ALLOW_INSECURE', host: s.host },
    );
    return;
  }
  throw new ServiceConfigError(
    `${s.service}: HOST is "${s.host}", reachable from the network, but no API token is configured, so every route would be open to anyone; ` +
      'set RSTAR_API_TOKENS_FILE or RSTAR_SECRETS_DIR (rstar security init writes the tokens), or HOST=127.0.0.1, ' +
      'or RSTAR_ALLOW_INSECURE=true to run open on purpose',
    'HOST',
  );
}

/** `host:port` as printed in a URL (`[::1]:8080` for IPv6). */
export function hostPort(address: string, port: number): string {
  return `${isIP(address) === 6 ? `[${address}]` : address}:${port}`;
}
