import { execFileSync } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync, appendFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import { freeLocalPort, until } from '@rstar/testing';


/** The newest Postgres server binaries on the machine (Debian's `/usr/lib/postgresql/<v>/bin`). */
export function postgresBin(): string | null {
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return null;
  const versions = readdirSync(root)
    .filter((v) => existsSync(join(root, v, 'bin', 'pg_ctl')))
    .sort((a, b) => Number(a) - Number(b));
  return versions.length ? join(root, versions.at(-1)!, 'bin') : null;
}

/**
 * A Postgres server of a test's own (initdb into a temporary folder, its own loopback port and socket
 * folder), so a test may stop and restart it without touching the shared server other tests use. As
 * root the server runs as the `postgres` user (initdb refuses root). Trust authentication on 127.0.0.1.
 */
export class PrivatePostgres {
  private constructor(
    readonly bin: string,
    readonly dataDir: string,
    readonly port: number,
    private readonly asRoot: boolean,
  ) {}

  /** `postgres://postgres@127.0.0.1:<port>/<db>`. */
  url(db = 'postgres'): string {
    return `postgres://postgres@127.0.0.1:${this.port}/${db}`;
  }

  /**
   * initdb + start. @throws Error when no Postgres binaries are installed (infra/local/install.sh installs
   * them) or the server does not start (the message carries its log).
   */
  static async start(): Promise<PrivatePostgres> {
    const bin = postgresBin();
    if (!bin) throw new Error('no Postgres server binaries under /usr/lib/postgresql: run infra/local/install.sh (Debian package postgresql)');
    const root = mkdtempSync(join(tmpdir(), 'rstar-pg-'));
    const asRoot = process.getuid?.() === 0;
    const dataDir = join(root, 'data');
    if (asRoot) {
      const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim());
      const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim());
      chownSync(root, uid, gid);
    }
    chmodSync(root, 0o700);
    const pg = new PrivatePostgres(bin, dataDir, await freeLocalPort(), asRoot);
    pg.run('initdb', ['-D', dataDir, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--no-sync']);
    appendFileSync(
      join(dataDir, 'postgresql.conf'),
      [`listen_addresses = '127.0.0.1'`, `port = ${pg.port}`, `unix_socket_directories = '${root}'`, 'max_connections = 100', 'fsync = on', ''].join('\n'),
    );
    await pg.startServer();
    return pg;
  }

  private run(tool: string, args: string[]): string {
    const cmd = join(this.bin, tool);
    const [file, argv] = this.asRoot ? ['runuser', ['-u', 'postgres', '--', cmd, ...args]] : [cmd, args];
    return execFileSync(file, argv, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  }

  /** Start the server and wait until it accepts a query. */
  async startServer(): Promise<void> {
    const log = join(this.dataDir, '..', 'server.log');
    if (!existsSync(log)) {
      writeFileSync(log, '');
      if (this.asRoot) execFileSync('chown', ['postgres:postgres', log]);
    }
    try {
      this.run('pg_ctl', ['-D', this.dataDir, '-l', log, '-w', '-t', '60', 'start']);
    } catch (e) {
      throw new Error(`private Postgres did not start: ${(e as Error).message}\n${execFileSync('tail', ['-n', '30', log], { encoding: 'utf8' })}`);
    }
    await until(
      async () => {
        const c = new Client({ connectionString: this.url() });
        try {
          await c.connect();
          await c.query('SELECT 1');
          return true;
        } catch {
          return false;
        } finally {
          await c.end().catch(() => undefined);
        }
      },
      `private Postgres on port ${this.port} to answer`,
      { timeoutMs: 60_000, everyMs: 200 },
    );
  }

  /** Stop the server (`fast`: open sessions are ended, as a restart or failover does to clients). */
  stopServer(): void {
    this.run('pg_ctl', ['-D', this.dataDir, '-m', 'fast', '-w', '-t', '60', 'stop']);
  }

  /** Stop the server if it runs and delete its folder. Never throws. */
  async destroy(): Promise<void> {
    try {
      this.stopServer();
    } catch {
      // not running
    }
    rmSync(join(this.dataDir, '..'), { recursive: true, force: true });
  }
}
