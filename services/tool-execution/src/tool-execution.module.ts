import { Module, RequestMethod, type DynamicModule, type MiddlewareConsumer, type NestModule } from '@nestjs/common';
import { BusModule, HealthModule, MetricsModule, parseServiceEnv, ServiceConfigModule } from '@rstar/nest-runtime';
import { CodeJudgeController } from './code-judge.controller';
import { ExecuteController } from './execute.controller';
import { ExecuteFastPath } from './execute.fast-path';
import { SandboxFusionController } from './sandbox-fusion.controller';
import { sandboxProviders } from './sandbox-pool.provider';
import { ToolCallsWorker } from './tool-calls.worker';
import { toolExecutionEnv } from './tool-execution.config';

/**
 * tool-execution: the sandbox pool behind HTTP (`/v1/execute`, `/v1/execute/batch`, and the drop-in
 * SandboxFusion `/run_code` and code-judge `/run`, `/run/batch`, `/run/long-batch`), and, unless
 * `RSTAR_NATS_URL=off`, behind NATS (`ToolCallRequested` -> `ToolCallCompleted`, `tool.execute`
 * request/reply). `env` defaults to `process.env`.
 */
@Module({})
export class ToolExecutionModule implements NestModule {
  configure(consumer: MiddlewareConsumer): void {
    consumer.apply(ExecuteFastPath).forRoutes({ path: 'v1/execute', method: RequestMethod.POST });
  }

  static forRoot(env: Record<string, string | undefined> = process.env): DynamicModule {
    const busOn = parseServiceEnv(toolExecutionEnv, env).RSTAR_NATS_URL !== 'off';
    return {
      module: ToolExecutionModule,
      imports: [
        ServiceConfigModule.forRoot(toolExecutionEnv, env),
        HealthModule.forService('tool-execution'),
        MetricsModule,
        ...(busOn ? [BusModule.forRootAsync()] : []),
      ],
      controllers: [ExecuteController, SandboxFusionController, CodeJudgeController],
      providers: [...sandboxProviders, ...(busOn ? [ToolCallsWorker] : [])],
    };
  }
}
