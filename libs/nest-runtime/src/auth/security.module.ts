import { Global, Module, type DynamicModule } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import { ConfigService } from '@nestjs/config';
import type { SecuritySettings } from '@rstar/security';
import { createLogger } from '@rstar/telemetry';
import { ApiTokenGuard } from './api-token.guard';
import { loadSecuritySettings, SECURITY_SETTINGS } from './security.settings.provider';

/**
 * A service's security (global): its {@link SecuritySettings} (`SECURITY_SETTINGS`, read once from the
 * validated settings) and the {@link ApiTokenGuard} on every route. Authentication is off when no API
 * token is configured, so the README's local recipe and `rstar train` work unchanged; the start then logs
 * a warning saying so and how to turn it on. `RSTAR_REQUIRE_AUTH=true` (what the Kubernetes security
 * component sets) makes a missing token list, NATS credential, signing key or trusted-key file a start
 * error instead.
 */
@Global()
@Module({})
export class SecurityModule {
  static forService(service: string): DynamicModule {
    return {
      module: SecurityModule,
      providers: [
        {
          provide: SECURITY_SETTINGS,
          inject: [ConfigService],
          useFactory: (cfg: ConfigService): SecuritySettings => {
            const s = loadSecuritySettings(cfg, service);
            const log = createLogger(service);
            if (s.apiTokens.size === 0) {
              log.warn(`HTTP AUTHENTICATION IS OFF: every route of ${service} is open to anyone who reaches it. Set RSTAR_API_TOKENS_FILE (or RSTAR_SECRETS_DIR) and RSTAR_REQUIRE_AUTH=true outside development (docs/security.md).`);
            } else {
              log.info(`HTTP routes need bearer tokens (${s.apiTokens.size} configured: ${s.apiTokens.names.join(', ')})`);
            }
            if (!s.securedBus || !s.signer) {
              log.warn(`bus security off: NATS credentials ${s.securedBus ? 'set' : 'none'}, event signing ${s.signer ? 'on' : 'off'}, signature checks ${s.verifier ? 'on' : 'off'} (docs/security.md).`);
            }
            return s;
          },
        },
        { provide: APP_GUARD, useClass: ApiTokenGuard },
      ],
      exports: [SECURITY_SETTINGS],
    };
  }
}
