import { Global, Module, type DynamicModule } from '@nestjs/common';
import { ConfigService } from '@nestjs/config';
import { BusConnection } from './bus.connection';
import { ReadinessRegistry } from './readiness.registry';
import { SERVICE_NAME } from './service-identity';

/**
 * The JetStream bus of a service ({@link BusConnection}), configured from the validated settings
 * `RSTAR_NATS_URL`, `RSTAR_STREAM`, `RSTAR_SUBJECT_PREFIX`, `RSTAR_STREAM_REPLICAS`, `RSTAR_STREAM_MAX_BYTES` (see `baseServiceEnv`). Global.
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
          inject: [ConfigService, ReadinessRegistry, SERVICE_NAME],
          useFactory: (cfg: ConfigService, registry: ReadinessRegistry, service: string) =>
            new BusConnection(
              {
                servers: String(cfg.get('RSTAR_NATS_URL')).split(',').map((s) => s.trim()).filter(Boolean),
                stream: cfg.get('RSTAR_STREAM'),
                subjectPrefix: cfg.get('RSTAR_SUBJECT_PREFIX'),
                replicas: cfg.get('RSTAR_STREAM_REPLICAS'),
                maxBytes: cfg.get('RSTAR_STREAM_MAX_BYTES'),
                name: service,
              },
              registry,
            ),
        },
      ],
      exports: [BusConnection],
    };
  }
}
