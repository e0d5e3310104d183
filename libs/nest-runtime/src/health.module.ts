import { Global, Module, type DynamicModule } from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import { HealthController } from './health.controller';
import { SecurityModule } from './auth/security.module';
import { ReadinessRegistry } from './readiness.registry';
import { SERVICE_NAME } from './service-identity';

/**
 * `/health/live` and `/health/ready` (Terminus) plus the global {@link ReadinessRegistry} that the bus,
 * the archive and each worker register with, and the service's name. Every service imports it, so it
 * also brings the {@link SecurityModule} (settings and the bearer-token guard on every route).
 */
@Global()
@Module({})
export class HealthModule {
  static forService(service: string): DynamicModule {
    return {
      module: HealthModule,
      imports: [TerminusModule.forRoot({ logger: false }), SecurityModule.forService(service)],
      controllers: [HealthController],
      providers: [ReadinessRegistry, { provide: SERVICE_NAME, useValue: service }],
      exports: [ReadinessRegistry, SERVICE_NAME],
    };
  }
}
