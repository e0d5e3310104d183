import 'reflect-metadata';
import { Body, Controller, HttpCode, Module, Post, type DynamicModule, type INestApplication } from '@nestjs/common';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { DEFAULT_BODY_LIMIT_BYTES, requestBodyErrorOf } from './body-limit';
import { startService } from './bootstrap';
import { ServiceConfigModule } from './service-config.module';

/** Answers how many characters of `text` it received. */
@Controller()
class EchoController {
  @Post('echo')
  @HttpCode(200)
  echo(@Body() body: { text?: string }): { chars: number } {
    return { chars: body?.text?.length ?? -1 };
  }
}

/** A service whose settings may declare RSTAR_HTTP_BODY_LIMIT_BYTES (as tool-execution's do). */
function serviceWith(limit: string | undefined): DynamicModule {
  const schema = z.object({
    PORT: z.coerce.number().int(),
    HOST: z.string(),
    ...(limit === undefined ? {} : { RSTAR_HTTP_BODY_LIMIT_BYTES: z.coerce.number().int() }),
  });
  @Module({})
  class EchoModule {}
  return {
    module: EchoModule,
    imports: [ServiceConfigModule.forRoot(schema, { PORT: '0', HOST: '127.0.0.1', RSTAR_HTTP_BODY_LIMIT_BYTES: limit })],
    controllers: [EchoController],
  };
}

async function post(url: string, body: string): Promise<{ status: number; type: string; json: any }> {
  const r = await fetch(`${url}/echo`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
  return { status: r.status, type: r.headers.get('content-type') ?? '', json: await r.json() };
}

describe('request bodies (startService)', () => {
  const apps: INestApplication[] = [];
  let small: string;
  let plain: string;

  beforeAll(async () => {
    const a = await startService(serviceWith('4096'), 'body-limit-test');
    const b = await startService(serviceWith(undefined), 'body-limit-test');
    apps.push(a.app, b.app);
    small = a.url;
    plain = b.url;
  });

  afterAll(async () => {
    for (const app of apps) await app.close();
  });

  it('accepts a body up to the service\'s RSTAR_HTTP_BODY_LIMIT_BYTES', async () => {
    expect(await post(small, JSON.stringify({ text: 'x'.repeat(4000) }))).toMatchObject({ status: 200, json: { chars: 4000 } });
  });

  it('refuses a larger one with the invalid_request JSON naming the limit and the setting, not HTML', async () => {
    const r = await post(small, JSON.stringify({ text: 'x'.repeat(5000) }));
    expect(r.status).toBe(413);
    expect(r.type).toMatch(/application\/json/);
    expect(r.json).toMatchObject({ status: 'invalid_request', code: 'invalid_request', field: 'body' });
    expect(r.json.message).toMatch(/\(5011 bytes\) is larger than this service's limit of 4096 bytes \(RSTAR_HTTP_BODY_LIMIT_BYTES\)/);
  });

  it('answers a body that is not JSON with invalid_request too', async () => {
    const r = await post(small, '{"text": ');
    expect(r).toMatchObject({ status: 400, json: { status: 'invalid_request', field: 'body' } });
    expect(r.json.message).toMatch(/not valid JSON/);
  });

  it('a service that declares no limit keeps body-parser\'s 100 KiB', async () => {
    const under = DEFAULT_BODY_LIMIT_BYTES - 100;
    expect((await post(plain, JSON.stringify({ text: 'y'.repeat(under) }))).json.chars).toBe(under);
    const over = await post(plain, JSON.stringify({ text: 'y'.repeat(DEFAULT_BODY_LIMIT_BYTES) }));
    expect(over).toMatchObject({ status: 413, json: { status: 'invalid_request', field: 'body' } });
    expect(over.json.message).toContain(`limit of ${DEFAULT_BODY_LIMIT_BYTES} bytes`);
  });

  it('leaves errors that are not the parsers\' alone', () => {
    expect(requestBodyErrorOf(new Error('boom'), 10, 'X')).toBeNull();
    expect(requestBodyErrorOf({ type: 'entity.too.large', length: 11 }, 10, 'X')?.httpStatus).toBe(413);
  });
});
