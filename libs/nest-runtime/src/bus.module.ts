import { Global, Module, type DynamicModule } from '@nestjs/common';
import { ConfigService } from '@nestjs/config';
import { BusConnection } from './bus.connection';
import type { SecuritySettings } from '@rstar/security';
import { BUS_ROLES, isPrincipal } from '@rstar/security';
import { SECURITY_SETTINGS } from './auth/security.settings.provider';
import { ReadinessRegistry } from './readiness.registry';
import { SERVICE_NAME } from './service-identity';

/**
 * The JetStream bus of a service ({@link BusConnection}), configured from the validated settings
 * `RSTAR_NATS_URL`, `RSTAR_STREAM`, `RSTAR_SUBJECT_PREFIX`, `RSTAR_STREAM_REPLICAS`, `RSTAR_STREAM_MAX_BYTES` (see
 * `baseServiceEnv`) and the service's security settings: with NATS credentials (secured mode) it authenticates as
 * the service's principal, signs what it publishes, checks the signatures of the control events it consumes, and
 * creates the stream only when its role manages it (the control plane); the others wait for it. Global.
 */
@Global()
@Module({})
export class BusModule {
  static forRootAsync(): DynamicModule {
    return {
      module: BusModule,
      providers: [
        {
          provide: BusConnection,
          inject: [ConfigService, ReadinessRegistry, SERVICE_NAME, SECURITY_SETTINGS],
          useFactory: (cfg: ConfigService, registry: ReadinessRegistry, service: string, security: SecuritySettings) =>
            new BusConnection(
              {
                servers: String(cfg.get('RSTAR_NATS_URL')).split(',').map((s) => s.trim()).filter(Boolean),
                stream: cfg.get('RSTAR_STREAM'),
                subjectPrefix: cfg.get('RSTAR_SUBJECT_PREFIX'),
                replicas: cfg.get('RSTAR_STREAM_REPLICAS'),
                maxBytes: cfg.get('RSTAR_STREAM_MAX_BYTES'),
                name: service,
                auth: security.auth,
                tls: security.tls,
                inboxPrefix: security.inboxPrefix,
                signer: security.signer,
                verifier: security.verifier,
                manageStream: !security.securedBus || (isPrincipal(service) && BUS_ROLES[service].manageStream === true),
              },
              registry,
            ),
        },
      ],
      exports: [BusConnection],
    };
  }
}
