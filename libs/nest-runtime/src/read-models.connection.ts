import { Global, Module, type DynamicModule, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import { ConfigService } from '@nestjs/config';
import type { ReadModels, ReadModelsOptions } from '@rstar/read-models';
import { createLogger } from '@rstar/telemetry';
import { Dependency } from './dependency';
import { ReadinessRegistry } from './readiness.registry';
import { SERVICE_NAME } from './service-identity';

/**
 * The read models (typeorm, @rstar/read-models) on the archive's database as a {@link Dependency}:
 * opened (and migrated) in the background, retrying until Postgres answers. typeorm is loaded only here,
 * when a service uses the read models (it costs close to a second of start-up).
 */
export class ReadModelsConnection extends Dependency<ReadModels> implements OnModuleInit, OnApplicationShutdown {
  constructor(opts: ReadModelsOptions, registry: ReadinessRegistry, service: string) {
    super(
      'read-models',
      async () => (await import('@rstar/read-models')).ReadModels.open(opts),
      (rm) => rm.close(),
      createLogger(service),
    );
    registry.register({
      name: 'read-models',
      probe: () => {
        const s = this.state();
        return { ready: s.ready, details: s.ready ? {} : { attempts: s.attempts, lastError: s.lastError } };
      },
    });
  }

  onModuleInit(): void {
    this.start();
  }

  async onApplicationShutdown(): Promise<void> {
    await this.close();
  }
}

/**
 * {@link ReadModelsConnection} from `RSTAR_DATABASE_URL`, `RSTAR_DB_SCHEMA` and `RSTAR_DB_MIGRATE` (the
 * archive's settings, see `storeEnv`; the tables live in schema `<RSTAR_DB_SCHEMA>_read`, and a role that
 * may not migrate only checks them). Imported by the services that query or project the read models. Global.
 */
@Global()
@Module({})
export class ReadModelsModule {
  static forRootAsync(): DynamicModule {
    return {
      module: ReadModelsModule,
      providers: [
        {
          provide: ReadModelsConnection,
          inject: [ConfigService, ReadinessRegistry, SERVICE_NAME],
          useFactory: (cfg: ConfigService, registry: ReadinessRegistry, service: string) =>
            new ReadModelsConnection(
              { connectionString: cfg.get('RSTAR_DATABASE_URL') as string, schema: cfg.get('RSTAR_DB_SCHEMA') || undefined, migrate: cfg.get('RSTAR_DB_MIGRATE') !== 'false' },
              registry,
              service,
            ),
        },
      ],
      exports: [ReadModelsConnection],
    };
  }
}
