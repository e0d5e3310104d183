import { ConsoleLogger, type DynamicModule, type INestApplication, type Type } from '@nestjs/common';
import { ConfigService } from '@nestjs/config';
import { NestFactory } from '@nestjs/core';
import { RstarError } from '@rstar/contracts';
import { createLogger, startTracing } from '@rstar/telemetry';
import { DEFAULT_BODY_LIMIT_BYTES, useBodyLimits } from './body-limit';
import { checkExposure, hostPort } from './listen-address';
import { SECURITY_SETTINGS } from './auth/security.settings.provider';
import type { SecuritySettings } from '@rstar/security';
import { ServiceConfigError } from './service-config';

/** The port a service was told to use is taken; the message says by whom and the fix. */
export class PortInUseError extends RstarError {
  constructor(message: string) {
    super('port_in_use', message, 'PORT');
  }
}

/** Who answers `/health/live` on a port (another rstar service names itself), or null. */
async function holderOf(port: number): Promise<string | null> {
  try {
    const r = await fetch(`http://127.0.0.1:${port}/health/live`, { signal: AbortSignal.timeout(1_000) });
    const body = (await r.json()) as { service?: string; pid?: number };
    return body.service ? `the rstar service "${body.service}" (pid ${body.pid})` : null;
  } catch {
    return null;
  }
}

/** A started service. */
export interface StartedService {
  app: INestApplication;
  /** `http://127.0.0.1:<port>` (the port actually bound when PORT=0; loopback when bound to every interface). */
  url: string;
  /** The address and port really listened on, e.g. `0.0.0.0:3002` or `127.0.0.1:41234`. */
  address: string;
}

/**
 * Create the service's Nest application from its root module, enable shutdown hooks (SIGTERM/SIGINT
 * run every `beforeApplicationShutdown`/`onApplicationShutdown` hook: workers drain, then the bus and
 * archive close), and listen on the validated `PORT`/`HOST` (refused by {@link checkExposure} when `HOST`
 * is reachable from the network and no API token is set). Logs are Nest's ConsoleLogger in JSON.
 * Request bodies (JSON, urlencoded) are read up to the service's `RSTAR_HTTP_BODY_LIMIT_BYTES` setting
 * when its schema has one, else {@link DEFAULT_BODY_LIMIT_BYTES}; a larger or malformed body is answered
 * with the `invalid_request` JSON ({@link useBodyLimits}).
 * @throws ServiceConfigError for a bad setting or an open API beyond loopback; PortInUseError when the port is taken (naming the rstar
 * service that holds it, when it is one).
 */
export async function startService(module: Type | DynamicModule, service: string): Promise<StartedService> {
  const app = await NestFactory.create(module, {
    logger: new ConsoleLogger({ json: true, prefix: service, logLevels: ['error', 'warn'] }),
    abortOnError: false,
    // The parsers are added below, with the service's body limit (body-parser's default is 100 KB).
    bodyParser: false,
  });
  // process.exit(0) after the hooks ran (instead of re-raising the signal): a clean stop exits 0 and prints its "stopped" line.
  app.enableShutdownHooks(['SIGTERM', 'SIGINT'], { useProcessExit: true });
  // No ETag hashing of every response (~0.5 ms of CPU per tool call answer) and no X-Powered-By.
  const express = app.getHttpAdapter().getInstance() as { set(k: string, v: unknown): void; disable(k: string): void };
  express.set('etag', false);
  express.disable('x-powered-by');
  const cfg = app.get(ConfigService);
  const bodyLimit = cfg.get<number | undefined>('RSTAR_HTTP_BODY_LIMIT_BYTES');
  useBodyLimits(app, typeof bodyLimit === 'number' ? bodyLimit : DEFAULT_BODY_LIMIT_BYTES);
  const port = Number(cfg.get('PORT'));
  const host = String(cfg.get('HOST') ?? '127.0.0.1');
  try {
    checkExposure({ service, host, apiTokens: apiTokenCount(app), allowInsecure: cfg.get('RSTAR_ALLOW_INSECURE') === 'true' }, createLogger(service));
  } catch (e) {
    await app.close().catch(() => undefined);
    throw e;
  }
  try {
    await app.listen(port, host);
  } catch (e) {
    await app.close().catch(() => undefined);
    if ((e as NodeJS.ErrnoException).code === 'EADDRINUSE') {
      const holder = await holderOf(port);
      throw new PortInUseError(`${service}: port ${port} is already in use${holder ? ` by ${holder}` : ' by another program'}; set PORT to a free port`);
    }
    throw e;
  }
  const server = app.getHttpServer() as import('node:http').Server;
  // Idle keep-alive connections outlive a client's or load balancer's own idle timeout, so the client side
  // closes them: a server closing first races a request sent at that moment (the client gets ECONNRESET).
  server.keepAliveTimeout = 65_000;
  server.headersTimeout = 66_000;
  const bound = server.address() as import('node:net').AddressInfo;
  const local = bound.address === '0.0.0.0' || bound.address === '::' ? '127.0.0.1' : bound.address;
  return { app, url: `http://${hostPort(local, bound.port)}`, address: hostPort(bound.address, bound.port) };
}

/**
 * A service's `main`: OpenTelemetry ({@link startTracing}: configured by the `OTEL_*` variables; a no-op
 * when the service's `tracing.ts` already started it, as it should, before http, express and pg load),
 * then builds the root module (`module()`, which validates the settings), {@link startService}, then one
 * JSON line `{"event":"listening","address":"<host:port really bound>","url":...}` on stdout (and
 * `{"event":"stopped",...}` when it exits).
 * A bad setting or a taken port ends the process with code 2 and one error line naming the variable and
 * the fix; dependencies that are not up yet never end it (they are retried, see `Dependency`).
 */
export async function runService(module: () => Type | DynamicModule, service: string): Promise<void> {
  startTracing(service);
  const log = createLogger(service);
  try {
    const { url, address } = await startService(module(), service);
    process.stdout.write(JSON.stringify({ event: 'listening', service, address, url, pid: process.pid }) + '\n');
    process.once('exit', (code) => process.stdout.write(JSON.stringify({ event: 'stopped', service, code }) + '\n'));
  } catch (e) {
    const known = e instanceof ServiceConfigError || e instanceof PortInUseError;
    log.error(known ? (e as Error).message : 'failed to start', { err: e, ...(known ? { field: (e as RstarError).field } : { stack: (e as Error).stack }) });
    process.exit(known ? 2 : 1);
  }
}

/**
 * How many API tokens the app's security settings hold; 0 for an app composed without the security
 * settings provider (a bare module), which therefore counts as open: fail closed beyond loopback.
 */
function apiTokenCount(app: INestApplication): number {
  try {
    return app.get<SecuritySettings>(SECURITY_SETTINGS, { strict: false }).apiTokens.size;
  } catch {
    return 0;
  }
}
