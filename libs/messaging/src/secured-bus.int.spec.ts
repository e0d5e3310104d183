import { execFileSync } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createUser } from '@nats-io/nkeys';
import { EVENT_TYPES, type RstarEvent } from '@rstar/contracts';
import {
  BUS_ROLES, EventSigner, expandDurable, generateSecrets, PRINCIPALS, renderNatsAuthConfig,
  type GeneratedSecrets, type Principal,
} from '@rstar/security';
import { createLogger } from '@rstar/telemetry';
import { natsServerVersion, sampleEvent, startNatsServer, until, type NatsServerProcess } from '@rstar/testing';
import { JetStreamBus, StreamMissingError } from './jetstream.bus';
import { PublishDeniedError } from './jetstream.publisher';
import { securedBusOptionsFromEnv } from './service.env';

const version = natsServerVersion();

/** The durable of a principal's subscription `i` its NATS permissions grant (the CLI names its own). */
const ownDurable = (p: Principal, i: number) => (BUS_ROLES[p].ownsUnlistedDurables ? `${p}-${i}` : expandDurable(p, BUS_ROLES[p].durables[i])[0]);
const lines: string[] = [];
const log = createLogger('secured-bus-test', { write: (l) => lines.push(l) });

/**
 * The secured bus on a real nats-server (the installed one, 2.9 here and in CI) whose configuration is
 * generated from the contracts: every principal's own flow works, anything else is refused and logged.
 */
describe.skipIf(!version)(`secured NATS: per-principal permissions and signed control events (nats-server ${version})`, () => {
  let dir: string;
  let secrets: GeneratedSecrets;
  let server: NatsServerProcess;
  const buses: JetStreamBus[] = [];
  const runId = `sec-${process.pid}`;

  const optionsOf = (p: Principal) => securedBusOptionsFromEnv(p, { RSTAR_SECRETS_DIR: secrets.principals[p].dir });
  const connectAs = async (p: Principal, extra: Partial<Parameters<typeof JetStreamBus.connect>[0]> = {}) => {
    const bus = await JetStreamBus.connect({ servers: server.url, name: p, logger: log.child({ principal: p }), publishDeadlineMs: 10_000, ...optionsOf(p), ...extra });
    buses.push(bus);
    return bus;
  };

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'rstar-secbus-'));
    // A second policy-serving replica (`b`) for the last test, its durables granted like the first's.
    secrets = generateSecrets({ outDir: join(dir, 'secrets'), scope: { instances: { 'policy-serving': ['default', 'b'] } } });
    server = await startNatsServer({ config: secrets.natsAuthConfig });
  });
  afterAll(async () => {
    for (const b of buses) await b.close().catch(() => undefined);
    await server?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('refuses a client without credentials and one with an unknown nkey', async () => {
    await expect(JetStreamBus.connect({ servers: server.url, name: 'anon', logger: log })).rejects.toThrow(/Authorization Violation/i);
    const stranger = new TextDecoder().decode(createUser().getSeed());
    await expect(JetStreamBus.connect({ servers: server.url, name: 'stranger', logger: log, auth: { kind: 'nkey', seed: stranger } })).rejects.toThrow(/Authorization Violation/i);
  });

  it('only the control plane creates the stream: the others wait for it (StreamMissingError) and may not create it', async () => {
    await expect(connectAs('reward-grading')).rejects.toBeInstanceOf(StreamMissingError);
    await expect(connectAs('reward-grading', { manageStream: true })).rejects.toThrow();
    await until(() => /Publish Violation.*\$JS\.API\.STREAM\.CREATE\.RSTAR/.test(server.log()), 'the server to log the refused stream creation');
    await connectAs('control-plane');
    await expect(connectAs('reward-grading')).resolves.toBeInstanceOf(JetStreamBus);
  });

  it('every principal runs its own subscriptions and publishes what it produces, signed with its key', async () => {
    const archive = await connectAs('control-plane');
    const archived = new Map<string, RstarEvent>();
    await archive.subscribe({ durable: 'archiver', types: EVENT_TYPES, allSubjects: true, from: 'all', handler: async (e) => void archived.set(e.id, e) });
    // Each principal's subscriptions, as its handlers make them.
    const received = new Map<string, Set<string>>();
    const connected = new Map<Principal, JetStreamBus>();
    for (const p of PRINCIPALS) {
      const bus = p === 'control-plane' ? archive : await connectAs(p);
      connected.set(p, bus);
      if (p === 'control-plane') continue;
      for (const [i, types] of BUS_ROLES[p].subscriptions.entries()) {
        const durable = ownDurable(p, i);
        received.set(durable, new Set());
        await bus.subscribe({ durable, types, from: 'all', handler: async (e) => void received.get(durable)!.add(e.type) });
      }
      expect(await bus.missingConsumers([ownDurable(p, 0)])).toEqual([]);
    }
    const published: RstarEvent[] = [];
    for (const p of PRINCIPALS) {
      const events = BUS_ROLES[p].produces.map((t) => sampleEvent(t, { runId, key: `${p}:${t}`, producer: p }));
      await connected.get(p)!.publish(events);
      published.push(...events);
    }
    await until(() => published.every((e) => archived.has(e.id)), 'every published event on the stream');
    for (const e of published) expect(archived.get(e.id)!.meta.signature?.keyId, e.id).toBe(e.meta.producer);
    for (const p of PRINCIPALS) {
      if (p === 'control-plane') continue;
      for (const [i, types] of BUS_ROLES[p].subscriptions.entries()) {
        await until(() => types.every((t) => received.get(ownDurable(p, i))!.has(t)), `${p}'s subscription ${i} to receive ${types.join(', ')}`);
      }
    }
  });

  it("refuses a client with reward-grading's credentials publishing PolicyUpdated or consuming it, and both sides log it", async () => {
    const grader = await connectAs('reward-grading');
    const forged = sampleEvent('PolicyUpdated', { runId, key: 'forged', producer: 'optimization', data: { version: 99, checkpointUri: '/evil' } });
    const err = await grader.publish(forged).then(() => null, (e: unknown) => e);
    expect(err).toBeInstanceOf(PublishDeniedError);
    expect((err as PublishDeniedError).subject).toBe('rstar.policy.updated');
    expect(lines.some((l) => l.includes('"level":"error"') && l.includes('NATS refused the publish of PolicyUpdated:forged on rstar.policy.updated'))).toBe(true);
    const graderKey = secrets.principals['reward-grading'].natsPublicKey;
    const violation = new RegExp(`Publish Violation - (User|Nkey) "${graderKey}", Subject "rstar\\.policy\\.updated"`);
    await until(() => violation.test(server.log()), 'the server to log the refused publish with the user and subject');
    await expect(grader.subscribe({ durable: 'grader-spy', types: ['PolicyUpdated'], handler: async () => undefined })).rejects.toThrow();
    // Its bus first asks for the consumer's info: a durable it does not own, so already that is refused.
    await until(() => /Publish Violation.*\$JS\.API\.CONSUMER\.INFO\.RSTAR\.grader-spy/.test(server.log()), 'the server to log the refused consumer');
    // The stream never got it: the optimization's own copy of the id is still accepted as new.
    const operator = await connectAs('cli');
    const seen: string[] = [];
    await operator.subscribe({ durable: 'forged-check', types: ['PolicyUpdated'], allSubjects: true, from: 'all', handler: async (e) => void seen.push(e.id) });
    await until(async () => (await operator.jsm.consumers.info(operator.stream, 'forged-check')).num_pending === 0, 'the check consumer to catch up');
    expect(seen).not.toContain(forged.id);
  });

  it('a verifying consumer dead-letters an unsigned or wrongly signed PolicyUpdated and handles the signed one', async () => {
    const serving = await connectAs('policy-serving');
    const handled: string[] = [];
    await serving.subscribe({ durable: 'policy-serving-policy-b', types: ['PolicyUpdated'], handler: async (e) => void handled.push(e.id) });
    const dlq: RstarEvent[] = [];
    const operator = await connectAs('cli');
    // Only this consumer's dead letters (the previous test's policy-serving subscription verifies too).
    await operator.subscribe({ durable: 'dlq-watch', types: ['DeadLettered'], allSubjects: true, handler: async (e) => void (e.type === 'DeadLettered' && e.data.consumer === 'policy-serving-policy-b' && dlq.push(e)) });
    const unsignedBus = await connectAs('optimization', { signer: null });
    const impostor = await connectAs('optimization', { signer: new EventSigner({ keyId: 'optimization', privateKey: generateKeyPairSync('ed25519').privateKey }) });
    const honest = await connectAs('optimization');
    const update = (key: string) => sampleEvent('PolicyUpdated', { runId, key, producer: 'optimization', data: { version: 7, checkpointUri: `/ckpt/${key}` } });
    await unsignedBus.publish(update('unsigned'));
    await impostor.publish(update('impostor'));
    await honest.publish(update('signed'));
    await until(() => handled.includes('PolicyUpdated:signed') && dlq.length >= 2, 'the signed update handled and two dead letters');
    expect(handled).toEqual(['PolicyUpdated:signed']);
    const reasons = dlq.map((d) => (d.type === 'DeadLettered' ? `${d.data.field} ${d.data.reason}` : '')).sort();
    expect(reasons[0]).toMatch(/^meta\.signature bad_signature: PolicyUpdated PolicyUpdated:impostor/);
    expect(reasons[1]).toMatch(/^meta\.signature unsigned_event: PolicyUpdated PolicyUpdated:unsigned carries no signature/);
    expect(lines.some((l) => l.includes('dead-lettered message PolicyUpdated:unsigned') && l.includes('unsigned_event'))).toBe(true);
  });
});

const opensslOk = (() => {
  try {
    execFileSync('openssl', ['version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
})();

describe.skipIf(!version || !opensslOk)('secured NATS over TLS (client connections)', () => {
  let dir: string;
  let server: NatsServerProcess;
  let secrets: GeneratedSecrets;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'rstar-tls-'));
    const ssl = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
    ssl('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1', '-subj', '/CN=rstar-test-ca', '-keyout', 'ca-key.pem', '-out', 'ca.pem');
    ssl('req', '-newkey', 'rsa:2048', '-nodes', '-subj', '/CN=127.0.0.1', '-keyout', 'server-key.pem', '-out', 'server.csr');
    writeFileSync(join(dir, 'ext.cnf'), 'subjectAltName=IP:127.0.0.1,DNS:localhost\n');
    ssl('x509', '-req', '-in', 'server.csr', '-CA', 'ca.pem', '-CAkey', 'ca-key.pem', '-CAcreateserial', '-days', '1', '-extfile', 'ext.cnf', '-out', 'server.pem');
    const tls = { certFile: join(dir, 'server.pem'), keyFile: join(dir, 'server-key.pem'), caFile: join(dir, 'ca.pem') };
    secrets = generateSecrets({ outDir: join(dir, 'secrets'), principals: ['control-plane'], tls });
    server = await startNatsServer({ config: renderNatsAuthConfig([{ principal: 'control-plane', nkey: secrets.principals['control-plane'].natsPublicKey }], {}, tls) });
  });
  afterAll(async () => {
    await server?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('connects with the CA from the secrets folder and refuses a client that does not trust the server', async () => {
    const opts = securedBusOptionsFromEnv('control-plane', { RSTAR_SECRETS_DIR: secrets.principals['control-plane'].dir });
    expect(opts.tls?.caFile).toMatch(/nats-ca\.pem$/);
    const bus = await JetStreamBus.connect({ servers: server.url, name: 'tls', logger: log, ...opts });
    await bus.publish(sampleEvent('RunStarted', { runId: 'tls-run', producer: 'control-plane' }));
    await bus.close();
    await expect(JetStreamBus.connect({ servers: server.url, name: 'tls-untrusting', logger: log, ...opts, tls: {} })).rejects.toThrow(/certificate|self.signed|unable to verify/i);
  });
});
