import { Module, type DynamicModule } from '@nestjs/common';
import { ConfigModule } from '@nestjs/config';
import type { z } from 'zod';
import { parseServiceEnv } from './service-config';

/**
 * The settings of a service, validated once at start with its zod schema through @nestjs/config
 * (`ConfigService<Env, true>.get('PORT', {infer: true})`). Global, so every module of the service reads
 * the same validated values. `env` defaults to `process.env` (tests pass their own).
 * @throws ServiceConfigError naming the variable and the fix, at once (before the application is built).
 */
@Module({})
export class ServiceConfigModule {
  static forRoot<S extends z.ZodType>(schema: S, env: Record<string, string | undefined> = process.env): DynamicModule {
    // Validated here, when the module is declared, so a bad setting fails before Nest builds anything.
    const settings = parseServiceEnv(schema, env) as Record<string, unknown>;
    return {
      module: ServiceConfigModule,
      global: true,
      imports: [
        ConfigModule.forRoot({
          ignoreEnvFile: true,
          skipProcessEnv: true,
          cache: true,
          load: [() => settings],
        }),
      ],
      exports: [ConfigModule],
    };
  }
}
