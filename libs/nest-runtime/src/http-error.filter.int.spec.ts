import 'reflect-metadata';
import { BadRequestException, Controller, Get, Module, type DynamicModule, type INestApplication } from '@nestjs/common';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, RstarError } from '@rstar/contracts';
import { startService } from './bootstrap';
import { DependencyNotReadyError } from './dependency';
import { HealthModule } from './health.module';
import { httpStatusOf } from './http-error.filter';
import { baseServiceEnv } from './service-config';
import { ServiceConfigModule } from './service-config.module';

/** Routes that throw what real routes throw, with no filter of their own: only the global one answers. */
@Controller('probe')
class ProbeController {
  @Get('not-ready')
  notReady() {
    throw new DependencyNotReadyError('postgres', 'ECONNREFUSED');
  }
  @Get('invalid')
  invalid() {
    throw new ConfigError('stages.0.steps: must be a positive integer', 'stages.0.steps');
  }
  @Get('not-found')
  notFound() {
    throw new RstarError('run_not_found', 'no events of run "x"', 'runId');
  }
  @Get('conflict')
  conflict() {
    throw new RstarError('trainer_step_conflict', 'step 3 was already applied with another batch', 'step');
  }
  @Get('bug')
  bug() {
    throw new TypeError('cannot read properties of undefined (secret internals)');
  }
  @Get('nest')
  nest() {
    throw new BadRequestException({ status: 'invalid_request', field: 'requests', message: 'requests: must be an array' });
  }
}

@Module({})
class ProbeModule {
  static forRoot(): DynamicModule {
    return {
      module: ProbeModule,
      imports: [ServiceConfigModule.forRoot(baseServiceEnv(0), { PORT: '0', HOST: '127.0.0.1' }), HealthModule.forService('probe')],
      controllers: [ProbeController],
    };
  }
}

describe('the one HTTP error filter (HealthModule registers it for every route of every service)', () => {
  let app: INestApplication;
  let url: string;
  beforeAll(async () => {
    ({ app, url } = await startService(ProbeModule.forRoot(), 'probe'));
  });
  afterAll(async () => {
    await app?.close();
  });
  const get = async (path: string) => {
    const r = await fetch(`${url}/probe/${path}`);
    return { status: r.status, body: (await r.json()) as Record<string, unknown> };
  };

  it('answers 503 for a dependency that is not ready, naming it', async () => {
    expect(await get('not-ready')).toEqual({ status: 503, body: { statusCode: 503, code: 'dependency_not_ready', field: null, message: expect.stringContaining('postgres is not connected yet') } });
  });

  it('answers 400 for invalid input, naming the field', async () => {
    expect(await get('invalid')).toEqual({ status: 400, body: { statusCode: 400, code: 'invalid_config', field: 'stages.0.steps', message: expect.stringContaining('positive integer') } });
  });

  it('answers 404 for a *_not_found code', async () => {
    expect(await get('not-found')).toMatchObject({ status: 404, body: { code: 'run_not_found', field: 'runId' } });
  });

  it('answers 409 for a conflict', async () => {
    expect(await get('conflict')).toMatchObject({ status: 409, body: { code: 'trainer_step_conflict', field: 'step' } });
  });

  it('answers 500 for an error that is not an RstarError, without its message', async () => {
    const r = await get('bug');
    expect(r).toEqual({ status: 500, body: { statusCode: 500, code: 'internal', field: null, message: 'internal error (logged by the service)' } });
    expect(JSON.stringify(r.body)).not.toContain('secret');
  });

  it("keeps a Nest HttpException's status and the keys its answer carried", async () => {
    expect(await get('nest')).toEqual({ status: 400, body: { statusCode: 400, status: 'invalid_request', code: 'http_400', field: 'requests', message: 'requests: must be an array' } });
  });

  it('maps codes by their conventions, never by the message', () => {
    expect(httpStatusOf(new RstarError('invalid_query', 'x'))).toBe(400);
    expect(httpStatusOf(new RstarError('grpo_invalid_input', 'x'))).toBe(400);
    expect(httpStatusOf(new RstarError('not_found', 'x'))).toBe(404);
    expect(httpStatusOf(new RstarError('engine_unavailable', 'not found'))).toBe(503);
    expect(httpStatusOf(new RstarError('publish_denied', 'x'))).toBe(500);
    expect(httpStatusOf(new Error('dependency_not_ready'))).toBe(500);
  });
});
