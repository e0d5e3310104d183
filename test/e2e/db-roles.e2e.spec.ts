import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dropArchiveRolesSql } from '@rstar/event-store';
import { JetStreamBus, securedBusOptionsFromEnv } from '@rstar/messaging';
import { generateSecrets, securityFromEnv, type GeneratedSecrets, type Principal } from '@rstar/security';
import { createLogger } from '@rstar/telemetry';
import { readTopicToEnd } from '@rstar/kafka-export';
import { freeLocalPort, kafkaMissing, natsServerVersion, sampleEvent, skipUnlessCi, startKafkaBroker, startNatsServer, until, type KafkaBroker, type NatsServerProcess } from '@rstar/testing';
import { createPrivateDatabase, REPO_ROOT, ServiceProcess, type PrivateDatabase } from '../support/service-process';

const PG_URL = process.env.RSTAR_TEST_DATABASE_URL ?? 'postgres://rstar:rstar@127.0.0.1:5432/rstar_test';
const version = natsServerVersion();
// The control plane's Kafka export runs with the control plane's role too (CI always has Kafka).
const noKafka = skipUnlessCi(kafkaMissing());
const TOPIC = 'rstar.db-roles';

/**
 * Run the real CLI; resolves with its exit code and output. A wide bound: the CLI starts under tsx, and on
 * a 2-core machine at load 24 `db roles` took 70 s (180 s was once too little while Kafka started beside it).
 */
function cli(args: string[]): Promise<{ status: number | null; out: string }> {
  // Asynchronous, so the test's own work (starting Kafka, the services) goes on while the CLI starts.
  const child = spawn(join(REPO_ROOT, 'node_modules/.bin/tsx'), ['libs/cli/src/main.ts', ...args], {
    cwd: REPO_ROOT, env: { ...process.env, RSTAR_LOG_LEVEL: 'warn' }, stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (b: Buffer) => (out += b.toString()));
  child.stderr!.on('data', (b: Buffer) => (out += b.toString()));
  const timer = setTimeout(() => child.kill('SIGKILL'), 480_000);
  return new Promise((res) => {
    child.once('error', (e) => (clearTimeout(timer), res({ status: null, out: `${out}${e.message}` })));
    child.once('close', (code) => (clearTimeout(timer), res({ status: code, out })));
  });
}

async function sql(url: string, text: string, params: unknown[] = []): Promise<any[]> {
  const c = new Client({ connectionString: url });
  await c.connect();
  try {
    return (await c.query(text, params)).rows;
  } finally {
    await c.end();
  }
}

async function failsWith(url: string, text: string): Promise<string | null> {
  return sql(url, text).then(() => null, (e: { code?: string }) => e.code ?? String(e));
}

/**
 * Issue 27, docs that work as written: on a fresh database, `rstar db roles` (as a superuser) migrates the
 * archive and the read models and writes one URL per service; the control plane, the resampler and the
 * optimizer start with theirs on a secured stack (RSTAR_REQUIRE_AUTH, RSTAR_DB_MIGRATE=false) and do their work (archive,
 * project, read the open runs); none of those roles may do what only the migration role may (disable the
 * append-only trigger, use the migration flag, change a table), and `rstar db migrate` runs as that role.
 * The control plane also runs the Kafka export with its role (`rstar db migrate` made the position table).
 * On that stack, tool-execution's forged RunCompleted (on its own subject, with its own key) stays out of the run.
 */
describe.skipIf(!version)('rstar db roles: each service starts with the URL printed for it, and only the migration role migrates', () => {
  let dir: string;
  let secrets: GeneratedSecrets;
  let nats: NatsServerProcess;
  let kafka: KafkaBroker | undefined;
  let db: PrivateDatabase;
  let urls: Record<string, string>;
  const prefix = `dbr${process.pid}${Date.now().toString(36)}_`;
  const services: ServiceProcess[] = [];
  const buses: JetStreamBus[] = [];
  const log = createLogger('db-roles-test', { write: () => undefined });
  const connectAs = async (p: Principal) => {
    const bus = await JetStreamBus.connect({ servers: nats.url, name: `test-${p}`, logger: log, ...securedBusOptionsFromEnv(p, { RSTAR_SECRETS_DIR: secrets.principals[p].dir }) });
    buses.push(bus);
    return bus;
  };

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'rstar-dbroles-'));
    secrets = generateSecrets({ outDir: join(dir, 'secrets') });
    const file = join(dir, 'db-urls.txt');
    // `db roles` needs only the database: it runs while NATS and Kafka start.
    const roles = (async () => {
      db = await createPrivateDatabase(PG_URL, `dbroles_${process.pid}_${Date.now()}`);
      return cli(['db', 'roles', '--database', db.url, '--prefix', prefix, '--passwords-out', file]);
    })();
    const servers = Promise.all([startNatsServer({ config: secrets.natsAuthConfig }), noKafka ? undefined : startKafkaBroker()]);
    // Both settle before either is looked at, so a failure of one never leaves the other running unseen.
    const [made, started] = await Promise.allSettled([roles, servers]);
    if (started.status === 'fulfilled') [nats, kafka] = started.value;
    if (started.status === 'rejected') throw started.reason;
    if (made.status === 'rejected') throw made.reason;
    await connectAs('control-plane');
    expect(made.value.status, made.value.out).toBe(0);
    urls = Object.fromEntries(readFileSync(file, 'utf8').trim().split('\n').map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]));
  }, 600_000);
  afterAll(async () => {
    for (const s of services) await s.stop();
    for (const b of buses) await b.close().catch(() => undefined);
    await nats?.stop();
    await kafka?.destroy();
    await db?.drop();
    await sql(PG_URL, dropArchiveRolesSql(prefix)).catch(() => undefined);
    if (dir) rmSync(dir, { recursive: true, force: true });
  }, 60_000);

  it('writes a URL per login, none of them a superuser', async () => {
    expect(Object.keys(urls).sort()).toEqual(['control_plane', 'operator', 'optimization', 'owner', 'resampling']);
    for (const [login, url] of Object.entries(urls)) {
      expect(new URL(url).username, login).toBe(`${prefix}${login}`);
      expect((await sql(url, 'SELECT rolsuper FROM pg_roles WHERE rolname = current_user'))[0].rolsuper, login).toBe(false);
    }
  });

  it('control-plane, resampling and optimization start secured with their URLs, archive, project and read; their roles cannot do owner-only operations', async () => {
    const env = (p: Principal, login: string) => ({
      RSTAR_NATS_URL: nats.url, RSTAR_DATABASE_URL: urls[login], RSTAR_DB_MIGRATE: 'false', RSTAR_REQUIRE_AUTH: 'true', RSTAR_SECRETS_DIR: secrets.principals[p].dir,
    });
    // optimization reaches its engines only when a run starts: an address nobody answers on is enough here.
    const extra: Record<string, Record<string, string>> = {
      optimization: { RSTAR_ENGINES: 'builtin=http://127.0.0.1:9', RSTAR_CHECKPOINT_DIR: join(dir, 'ckpt') },
      'control-plane': kafka ? { RSTAR_KAFKA_BROKERS: kafka.broker, RSTAR_KAFKA_TOPIC: TOPIC, RSTAR_KAFKA_PARTITIONS: '1' } : {},
    };
    // Migrations run as the migration role (nothing pending here), and not as a service's: checked at the end,
    // the CLI starting meanwhile.
    const migrated = cli(['db', 'migrate', '--database', urls.owner]);
    for (const [p, login] of [['control-plane', 'control_plane'], ['resampling', 'resampling'], ['optimization', 'optimization']] as const) {
      services.push(new ServiceProcess({ name: p, entry: `services/${p}/src/main.ts`, port: await freeLocalPort(), env: { ...env(p, login), ...extra[p] }, startTimeoutMs: 300_000 }));
    }
    // start() resolves once /health/ready answers 200: Postgres (as this role), the read models and NATS are up.
    // The three start at once: none needs another to be up (no service migrates, the run comes after).
    await Promise.all(services.map((svc) => svc.start()));
    const runId = `run-${prefix}`;
    await (await connectAs('cli')).publish(sampleEvent('RunStarted', { runId, key: runId, producer: 'cli' }));
    // The control plane archives it (its role appends) and projects it (its role writes the read models).
    await until(async () => (await sql(db.url, `SELECT status FROM rstar_read.runs WHERE run_id = $1`, [runId]))[0]?.status === 'running', 'the run in the read models', { timeoutMs: 90_000 });
    expect((await sql(db.url, `SELECT count(*)::int AS n FROM rstar.events WHERE run_id = $1`, [runId]))[0].n).toBe(1);
    for (const s of services) expect(s.running, s.opts.name).toBe(true);

    // Issue 27's insider against the real services: tool-execution, on the one subject it may publish to, a
    // RunCompleted for this run signed with its own key. The control plane's archiver keeps it out of the run
    // (quarantined with the reason), the read models still show the run running, and every service stays up.
    const tool = await connectAs('tool-execution');
    const toolSigner = securityFromEnv({ RSTAR_SECRETS_DIR: secrets.principals['tool-execution'].dir }, 'tool-execution').signer!;
    const forged = toolSigner.sign([sampleEvent('RunCompleted', { runId, key: runId, producer: 'optimization' })])[0]!;
    await tool.publishRaw('rstar.tool.completed', JSON.stringify(forged), `rstar.tool.completed|${forged.id}`);
    const refused = await until(async () => {
      const rows = await sql(db.url, `SELECT consumer, reason FROM rstar.quarantine WHERE run_id = $1 AND consumer = 'archiver'`, [runId]);
      return rows.length ? rows : undefined;
    }, 'the forged RunCompleted quarantined by the control plane', { timeoutMs: 90_000 });
    expect(refused[0].reason).toMatch(/^subject_mismatch: RunCompleted \S+ arrived on rstar\.tool\.completed/);
    expect((await sql(db.url, `SELECT count(*)::int AS n FROM rstar.events WHERE run_id = $1 AND type = 'RunCompleted'`, [runId]))[0].n).toBe(0);
    expect((await sql(db.url, `SELECT status FROM rstar_read.runs WHERE run_id = $1`, [runId]))[0].status).toBe('running');
    for (const s of services) expect(s.running, s.opts.name).toBe(true);
    if (kafka) {
      // The export reads the archive and stores its position with the control plane's role: the event reaches the topic.
      const ids = await until(async () => {
        const got = (await readTopicToEnd({ brokers: [kafka!.broker] }, TOPIC).catch(() => [])).map((m) => m.key);
        return got.includes(runId) ? got : undefined;
      }, 'the run exported to Kafka by the control plane with its own role', { timeoutMs: 120_000, everyMs: 500 });
      expect(ids.filter((k) => k === runId)).toHaveLength(1);
      expect((await sql(db.url, `SELECT events::int AS n FROM rstar.kafka_export_positions WHERE topic = $1`, [TOPIC]))[0]?.n).toBeGreaterThanOrEqual(1);
      // The position row is the control plane's alone: other services' roles may not move it.
      for (const login of ['resampling', 'optimization', 'operator']) {
        expect(await failsWith(urls[login], `UPDATE rstar.kafka_export_positions SET events = 0`), login).toBe('42501');
      }
    }

    for (const login of ['control_plane', 'resampling', 'optimization', 'operator']) {
      const url = urls[login];
      expect(await failsWith(url, 'ALTER TABLE rstar.events DISABLE TRIGGER events_append_only_rows'), login).toBe('42501');
      expect(await failsWith(url, `BEGIN; SET LOCAL rstar.migrating = 'on'; DELETE FROM rstar.events; COMMIT;`), login).toBe('42501');
      expect(await failsWith(url, 'ALTER TABLE rstar.events ADD COLUMN x int'), login).toBe('42501');
      expect(await failsWith(url, 'ALTER TABLE rstar_read.runs ADD COLUMN x int'), login).toBe('42501');
      expect(await failsWith(url, 'CREATE TABLE rstar.x (a int)'), login).toBe('42501');
    }
    expect((await sql(db.url, `SELECT count(*)::int AS n FROM rstar.events WHERE run_id = $1`, [runId]))[0].n).toBe(1);

    const { status, out } = await migrated;
    expect(status, out).toBe(0);
    expect(out).toMatch(/archive schema rstar is at migration \d+; read models in rstar_read and the Kafka export's table are current/);
  }, 900_000);
});
