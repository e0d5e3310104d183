import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateKeyPairSync } from 'node:crypto';
import type { RstarEvent } from '@rstar/contracts';
import { startBuiltinEngine, type BuiltinEngine } from '@rstar/engines';
import { JetStreamBus, securedBusOptionsFromEnv } from '@rstar/messaging';
import { PolicyModel } from '@rstar/policy';
import { ApiTokenSet, EventSigner, generateSecrets, type GeneratedSecrets, type Principal } from '@rstar/security';
import { createLogger } from '@rstar/telemetry';
import { freeLocalPort, type NatsServerProcess, natsServerVersion, sampleEvent, startNatsServer, until } from '@rstar/testing';
import { ServiceProcess } from '../support/service-process';

const CFG = { layers: 1, dModel: 16, heads: 2, context: 64, ffMult: 2 };
const version = natsServerVersion();

/**
 * policy-serving as a process on a secured NATS (permissions generated from the contracts, its own nkey,
 * RSTAR_REQUIRE_AUTH): a `PolicyUpdated` that is unsigned, or signed with a key that is not the
 * optimizer's, is dead-lettered with the reason and never reaches the engines; the optimizer's signed one
 * reloads them.
 */
describe.skipIf(!version)('secured policy-serving: unsigned or forged PolicyUpdated is refused, the run is not affected', () => {
  let dir: string;
  let secrets: GeneratedSecrets;
  let nats: NatsServerProcess;
  let engine: BuiltinEngine;
  let serving: ServiceProcess;
  let checkpoint: { dir: string; hash: string };
  const buses: JetStreamBus[] = [];
  const log = createLogger('secured-policy-test', { level: 'warn' });
  const tokens = () => Object.fromEntries(readFileSync(join(secrets.outDir, 'operator-tokens.txt'), 'utf8').trim().split('\n').map((l) => [l.split(' ')[0], l.split(': ')[1]]));
  const connectAs = async (p: Principal, extra: Partial<Parameters<typeof JetStreamBus.connect>[0]> = {}) => {
    const bus = await JetStreamBus.connect({ servers: nats.url, name: `test-${p}`, logger: log, ...securedBusOptionsFromEnv(p, { RSTAR_SECRETS_DIR: secrets.principals[p].dir }), ...extra });
    buses.push(bus);
    return bus;
  };
  const engineInfo = async () => {
    const r = await fetch(`${engine.url}/get_server_info`, { headers: { authorization: `Bearer ${tokens().dashboard}` } });
    return (await r.json()) as { weight_version: string };
  };
  const servingReady = async () => (await (await fetch(`http://127.0.0.1:${serving.opts.port}/health/ready`)).json()) as { info?: { rollouts?: { policyVersion?: number } } };

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'rstar-secured-ps-'));
    secrets = generateSecrets({ outDir: join(dir, 'secrets') });
    nats = await startNatsServer({ config: secrets.natsAuthConfig });
    // The control plane's credentials create the stream; policy-serving may not.
    await connectAs('control-plane');
    // The engine accepts its own token list (the engine key): the services' tokens are not the engines'.
    const apiTokens = ApiTokenSet.parse(readFileSync(join(secrets.engineDir, 'api-tokens.txt'), 'utf8'), 'api-tokens.txt');
    engine = await startBuiltinEngine({ port: 0, modelConfig: CFG, kvCapacityTokens: 4096, seed: 1, apiTokens });
    const model = await PolicyModel.create(CFG, 42);
    checkpoint = { dir: join(dir, 'ckpt-v1'), hash: model.save(join(dir, 'ckpt-v1')).hash };
    model.dispose();
    serving = new ServiceProcess({
      name: 'policy-serving',
      entry: 'services/policy-serving/src/main.ts',
      port: await freeLocalPort(),
      env: { RSTAR_NATS_URL: nats.url, RSTAR_ENGINES: `builtin=${engine.url}`, RSTAR_SECRETS_DIR: secrets.principals['policy-serving'].dir, RSTAR_REQUIRE_AUTH: 'true', RSTAR_ACK_WAIT_MS: '5000' },
      startTimeoutMs: 150_000,
    });
    await serving.start();
  }, 240_000);
  afterAll(async () => {
    await serving?.stop();
    for (const b of buses) await b.close().catch(() => undefined);
    await engine?.close();
    await nats?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  }, 60_000);

  it('dead-letters the unsigned and the forged update, leaves the engines and the policy version alone, and applies the signed one', async () => {
    const before = (await engineInfo()).weight_version;
    expect((await servingReady()).info?.rollouts?.policyVersion).toBe(0);
    // The operator watches the dead letters (a consumer of its own: the services' durables are theirs alone).
    const operator = await connectAs('cli');
    const dead: RstarEvent[] = [];
    // Only policy-serving's: the operator's own consumer verifies every event too, and dead-letters the forgeries it sees.
    await operator.subscribe({ durable: 'dlq', types: ['DeadLettered'], allSubjects: true, from: 'all', handler: async (e) => void (e.type === 'DeadLettered' && e.data.consumer === 'policy-serving-policy-default' && dead.push(e)) });
    const update = (key: string) => sampleEvent('PolicyUpdated', { runId: 'run-secured', key, producer: 'optimization', data: { version: 1, checkpointUri: checkpoint.dir, checkpointHash: checkpoint.hash } });

    // With the optimizer's NATS credentials but no signature, and with a key that is not the optimizer's.
    await (await connectAs('optimization', { signer: null })).publish(update('unsigned'));
    const impostor = new EventSigner({ keyId: 'optimization', privateKey: generateKeyPairSync('ed25519').privateKey });
    await (await connectAs('optimization', { signer: impostor })).publish(update('forged'));
    await until(() => dead.length >= 2, 'policy-serving to dead-letter both updates', { timeoutMs: 60_000 });
    const reasons = dead.map((d) => (d.type === 'DeadLettered' ? `${d.data.consumer} ${d.data.reason}` : '')).sort();
    expect(reasons[0]).toMatch(/^policy-serving-policy-default bad_signature: PolicyUpdated PolicyUpdated:forged/);
    expect(reasons[1]).toMatch(/^policy-serving-policy-default unsigned_event: PolicyUpdated PolicyUpdated:unsigned carries no signature/);
    expect(serving.output).toMatch(/dead-lettered message PolicyUpdated:unsigned .*unsigned_event/);
    expect((await engineInfo()).weight_version).toBe(before);
    expect((await servingReady()).info?.rollouts?.policyVersion).toBe(0);

    // The optimizer's signed update goes through: the engines reload the checkpoint.
    await (await connectAs('optimization')).publish(update('signed'));
    await until(async () => (await engineInfo()).weight_version === checkpoint.hash, 'the engine to load the signed update');
    await until(async () => (await servingReady()).info?.rollouts?.policyVersion === 1, 'policy-serving to serve version 1');
    expect(dead).toHaveLength(2);
  }, 180_000);

  it('its HTTP routes need a token with the scope; health stays open', async () => {
    const url = `http://127.0.0.1:${serving.opts.port}`;
    expect((await fetch(`${url}/health/live`)).status).toBe(200);
    expect((await fetch(`${url}/metrics`)).status).toBe(200);
    expect((await fetch(`${url}/v1/engines`)).status).toBe(401);
    expect((await fetch(`${url}/v1/engines`, { headers: { authorization: `Bearer ${tokens()['tool-client']}` } })).status).toBe(403);
    expect((await fetch(`${url}/v1/engines`, { headers: { authorization: `Bearer ${tokens().dashboard}` } })).status).toBe(200);
  });
});
