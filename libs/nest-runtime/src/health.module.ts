import { Global, Module, type DynamicModule } from '@nestjs/common';
import { APP_FILTER } from '@nestjs/core';
import { TerminusModule } from '@nestjs/terminus';
import { RstarHttpErrorFilter } from './http-error.filter';
import { HealthController } from './health.controller';
import { SecurityModule } from './auth/security.module';
import { ReadinessRegistry } from './readiness.registry';
import { SERVICE_NAME } from './service-identity';

/**
 * `/health/live` and `/health/ready` (Terminus) plus the global {@link ReadinessRegistry} that the bus,
 * the archive and each worker register with, and the service's name. Every service imports it, so it
 * also brings the {@link SecurityModule} (settings and the bearer-token guard on every route) and the
 * one exception filter of every route ({@link RstarHttpErrorFilter}: error code -> HTTP status).
 */
@Global()
@Module({})
export class HealthModule {
  static forService(service: string): DynamicModule {
    return {
      module: HealthModule,
      imports: [TerminusModule.forRoot({ logger: false }), SecurityModule.forService(service)],
      controllers: [HealthController],
      providers: [ReadinessRegistry, { provide: SERVICE_NAME, useValue: service }, { provide: APP_FILTER, useClass: RstarHttpErrorFilter }],
      exports: [ReadinessRegistry, SERVICE_NAME],
    };
  }
}
