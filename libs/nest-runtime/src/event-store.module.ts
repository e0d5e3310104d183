import { Global, Module, type DynamicModule } from '@nestjs/common';
import { ConfigService } from '@nestjs/config';
import { ReadinessRegistry } from './readiness.registry';
import { SERVICE_NAME } from './service-identity';
import type { SecuritySettings } from '@rstar/security';
import { SECURITY_SETTINGS } from './auth/security.settings.provider';
import { StoreConnection } from './store.connection';

/**
 * The Postgres event archive ({@link StoreConnection}) from `RSTAR_DATABASE_URL`, `RSTAR_DB_SCHEMA` and
 * `RSTAR_DB_MIGRATE` (see `storeEnv`; false for a least-privilege role that may not migrate). Imported only by the services that read or write the archive. Global.
 */
@Global()
@Module({})
export class EventStoreModule {
  static forRootAsync(): DynamicModule {
    return {
      module: EventStoreModule,
      providers: [
        {
          provide: StoreConnection,
          inject: [ConfigService, ReadinessRegistry, SERVICE_NAME, SECURITY_SETTINGS],
          useFactory: (cfg: ConfigService, registry: ReadinessRegistry, service: string, security: SecuritySettings) =>
            new StoreConnection(
              { connectionString: cfg.get('RSTAR_DATABASE_URL'), schema: cfg.get('RSTAR_DB_SCHEMA'), migrate: cfg.get('RSTAR_DB_MIGRATE') !== 'false' },
              registry,
              service,
              security.requireAuth,
            ),
        },
      ],
      exports: [StoreConnection],
    };
  }
}
