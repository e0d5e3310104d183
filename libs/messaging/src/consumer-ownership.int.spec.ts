import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AckPolicy, DeliverPolicy } from '@nats-io/jetstream';
import { BUS_ROLES, consumerFilters, durablesOf, expandDurable, generateSecrets, PRINCIPALS, type GeneratedSecrets, type Principal } from '@rstar/security';
import { EVENT_CONTRACTS, type EventType } from '@rstar/contracts';
import { createLogger } from '@rstar/telemetry';
import { natsServerMissing, natsServerVersion, sampleEvent, skipUnlessCi, startNatsServer, until, type NatsServerProcess } from '@rstar/testing';
import { JetStreamBus } from './jetstream.bus';
import { securedBusOptionsFromEnv } from './service.env';

const version = natsServerVersion();
const log = createLogger('consumer-ownership-test', { write: () => undefined });

/** Every durable a principal owns, with the filter subject its subscription uses. */
function ownedConsumers(p: Principal): Array<{ durable: string; filter: string; types: readonly EventType[] }> {
  if (BUS_ROLES[p].ownsUnlistedDurables) return [{ durable: `${p}-follow-run`, filter: consumerFilters(p, 'rstar')[0], types: BUS_ROLES[p].subscriptions[0] }];
  const role = BUS_ROLES[p];
  return role.durables.flatMap((pattern, i) => {
    const types = role.subscriptions[i];
    const filter = types.length === 1 && !role.consumesAll ? EVENT_CONTRACTS[types[0]].subject : 'rstar.>';
    return expandDurable(p, pattern).map((durable) => ({ durable, filter, types }));
  });
}

/**
 * Issue 27, build 1, on a real nats-server configured from the contracts: a durable consumer can be
 * read, acked and inspected only by its owner. Every principal tries every other principal's durables
 * (pull, ack, info); the server refuses each, and the victims' consumers still hold every message.
 */
describe.skipIf(skipUnlessCi(natsServerMissing()))(`secured NATS: consumers only their owner can use (nats-server ${version})`, () => {
  let dir: string;
  let secrets: GeneratedSecrets;
  let server: NatsServerProcess;
  const buses = new Map<Principal, JetStreamBus>();

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'rstar-owners-'));
    secrets = generateSecrets({ outDir: join(dir, 'secrets') });
    server = await startNatsServer({ config: secrets.natsAuthConfig });
    for (const p of ['control-plane', ...PRINCIPALS.filter((x) => x !== 'control-plane')] as Principal[]) {
      buses.set(p, await JetStreamBus.connect({
        servers: server.url, name: p, logger: log, publishDeadlineMs: 10_000,
        ...securedBusOptionsFromEnv(p, { RSTAR_SECRETS_DIR: secrets.principals[p].dir }),
      }));
    }
  }, 60_000);
  afterAll(async () => {
    for (const b of buses.values()) await b.close().catch(() => undefined);
    await server?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('every principal is refused pulling, acking and reading the info of every other principal\'s durables; the owners still get all their messages', async () => {
    // Each owner creates its consumers (not pulling yet), then every type is published once.
    for (const p of PRINCIPALS) {
      for (const c of ownedConsumers(p)) {
        await buses.get(p)!.jsm.consumers.add('RSTAR', { durable_name: c.durable, filter_subject: c.filter, ack_policy: AckPolicy.Explicit, deliver_policy: DeliverPolicy.All });
      }
    }
    for (const p of PRINCIPALS) await buses.get(p)!.publish(BUS_ROLES[p].produces.map((t) => sampleEvent(t, { runId: 'owners', key: `${p}:${t}`, producer: p })));
    const pendingBefore = new Map<string, number>();
    for (const p of PRINCIPALS) {
      for (const c of ownedConsumers(p)) pendingBefore.set(c.durable, (await buses.get(p)!.jsm.consumers.info('RSTAR', c.durable)).num_pending);
    }
    expect([...pendingBefore.values()].every((n) => n > 0), JSON.stringify([...pendingBefore])).toBe(true);

    let attempts = 0;
    for (const attacker of PRINCIPALS) {
      const nc = buses.get(attacker)!.nc;
      for (const owner of PRINCIPALS.filter((x) => x !== attacker)) {
        for (const { durable } of ownedConsumers(owner)) {
          attempts++;
          const next = await nc.request(`$JS.API.CONSUMER.MSG.NEXT.RSTAR.${durable}`, JSON.stringify({ batch: 10, no_wait: true }), { timeout: 1_500 }).then(() => 'answered', (e: Error) => e.message);
          expect(next, `${attacker} pulling ${owner}'s ${durable}`).toMatch(/permission|timeout|TIMEOUT/i);
          nc.publish(`$JS.ACK.RSTAR.${durable}.1.1.1.0.0`, '+ACK');
          const watched = (BUS_ROLES[attacker].watches ?? []).includes(durable);
          const info = await buses.get(attacker)!.jsm.consumers.info('RSTAR', durable).then(() => 'answered', (e: Error) => e.message);
          if (watched) expect(info, `${attacker} may watch ${durable}`).toBe('answered');
          else expect(info, `${attacker} reading ${owner}'s ${durable} info`).toMatch(/permission|timeout|TIMEOUT/i);
        }
      }
    }
    await nc0Flush(buses);
    // The server logged the refusals, naming the subjects.
    for (const owner of PRINCIPALS) {
      for (const { durable } of ownedConsumers(owner)) {
        expect(server.log(), durable).toMatch(new RegExp(`Publish Violation.*"\\$JS\\.API\\.CONSUMER\\.MSG\\.NEXT\\.RSTAR\\.${durable}"`));
        expect(server.log(), durable).toMatch(new RegExp(`Publish Violation.*"\\$JS\\.ACK\\.RSTAR\\.${durable}\\.`));
      }
    }
    // Nothing was taken from any victim: each owner's consumer was never delivered to, and still holds its messages.
    for (const p of PRINCIPALS) {
      for (const c of ownedConsumers(p)) {
        const info = await buses.get(p)!.jsm.consumers.info('RSTAR', c.durable);
        expect(info.delivered.consumer_seq, c.durable).toBe(0);
        expect(info.num_pending, c.durable).toBe(pendingBefore.get(c.durable));
      }
    }
    expect(attempts).toBeGreaterThan(50);
  }, 300_000);

  it('each owner pulls and acks its own durables', async () => {
    for (const p of PRINCIPALS) {
      const bus = buses.get(p)!;
      for (const { durable, types } of ownedConsumers(p)) {
        const sub = await bus.subscribe({ durable, types, allSubjects: p === 'control-plane', from: 'all', handler: async () => undefined });
        await until(async () => (await bus.jsm.consumers.info('RSTAR', durable)).num_pending === 0 && (await bus.jsm.consumers.info('RSTAR', durable)).num_ack_pending === 0, `${p} to drain ${durable}`);
        await sub.drain();
      }
    }
    expect(durablesOf('tool-execution')).toEqual(['tool-execution']);
  }, 120_000);
});

/** Flush every connection, so the server has handled (and logged) everything sent. */
async function nc0Flush(buses: Map<Principal, JetStreamBus>): Promise<void> {
  for (const b of buses.values()) await b.nc.flush();
}
