import { createServer, type Server, type Socket } from 'node:net';
import { PGlite } from '@electric-sql/pglite';

/** A running embedded Postgres (PGlite) reachable over TCP by any `pg` client. */
export interface EmbeddedPostgres {
  /** `postgres://postgres@127.0.0.1:<port>/postgres` */
  url: string;
  /** Close client connections and the listener, then close PGlite (flushing `dataDir`). */
  close(): Promise<void>;
}

export interface EmbeddedPostgresOptions {
  /** Directory for the database files; omitted = in memory (gone on close). */
  dataDir?: string;
  /** TCP port (default 0 = any free port). */
  port?: number;
}

const SSL_REQUEST = 80877103;
const CANCEL_REQUEST = 80877102;
/** Frontend messages after which the client waits for an answer: Sync, Query, Flush, Terminate, password/SASL. */
const FLUSH_TYPES = new Set(['S', 'Q', 'H', 'X', 'p', 'd', 'c', 'f']);

/**
 * Start PGlite behind a Postgres wire-protocol socket (standalone mode, docs/design/architecture.md §4), so the same
 * `pg` code runs on it as on real Postgres, from any number of connections.
 *
 * Why not @electric-sql/pglite-socket's server as is: PGlite is one session, and pglite-socket 0.2.17
 * interleaves the extended-protocol messages of concurrent connections one message at a time, so one
 * client's Parse replaces another's unnamed statement ("unnamed prepared statement does not exist").
 * Here each connection's messages are handed to PGlite as whole groups ending at Sync/Query, groups run
 * one at a time, and while a connection is inside a transaction only its groups run (the others queue),
 * which gives every connection a consistent session. A connection that drops mid-transaction is rolled
 * back. COPY is not supported.
 */
export async function startEmbeddedPostgres(opts: EmbeddedPostgresOptions = {}): Promise<EmbeddedPostgres> {
  const db = await PGlite.create(opts.dataDir ? { dataDir: opts.dataDir } : {});
  const exec = new GroupExecutor(db);
  const sockets = new Set<Socket>();
  let nextId = 1;
  const server: Server = createServer((socket) => {
    sockets.add(socket);
    const conn = new Connection(nextId++, socket, exec);
    socket.on('close', () => {
      sockets.delete(socket);
      void exec.disconnect(conn.id);
    });
  });
  await new Promise<void>((res, rej) => {
    server.once('error', rej);
    server.listen(opts.port ?? 0, '127.0.0.1', () => res());
  });
  const port = (server.address() as { port: number }).port;
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((r) => server.close(() => r()));
      await exec.idle();
      await db.close();
    },
  };
}

interface Job {
  conn: number;
  bytes: Uint8Array;
  onData: (chunk: Uint8Array) => void;
  done: () => void;
}

/** Runs message groups one at a time; a connection inside a transaction has the database to itself. */
class GroupExecutor {
  private queue: Job[] = [];
  private running = false;
  private txOwner: number | null = null;
  private idleWaiters: Array<() => void> = [];

  constructor(private readonly db: PGlite) {}

  submit(job: Job): void {
    this.queue.push(job);
    void this.pump();
  }

  async disconnect(conn: number): Promise<void> {
    this.queue = this.queue.filter((j) => j.conn !== conn);
    if (this.txOwner === conn) {
      await this.db.exec('ROLLBACK').catch(() => undefined);
      this.txOwner = null;
      void this.pump();
    }
  }

  idle(): Promise<void> {
    return this.running ? new Promise((r) => this.idleWaiters.push(r)) : Promise.resolve();
  }

  private async pump(): Promise<void> {
    if (this.running) return;
    this.running = true;
    try {
      for (;;) {
        const i = this.txOwner === null ? 0 : this.queue.findIndex((j) => j.conn === this.txOwner);
        if (i < 0 || i >= this.queue.length) break;
        const [job] = this.queue.splice(i, 1);
        try {
          await this.db.runExclusive(() => this.db.execProtocolRawStream(job.bytes, { onRawData: job.onData }));
        } catch {
          // The backend already sent an ErrorResponse for protocol-level errors; nothing else to report.
        }
        this.txOwner = this.db.isInTransaction() ? job.conn : null;
        job.done();
      }
    } finally {
      this.running = false;
      this.idleWaiters.splice(0).forEach((r) => r());
    }
  }
}

/** One client connection: frames its messages and submits them in groups ending at a flush point. */
class Connection {
  private buf = Buffer.alloc(0);
  private pending: Buffer[] = [];
  private started = false;
  private chain: Promise<void> = Promise.resolve();

  constructor(
    readonly id: number,
    private readonly socket: Socket,
    private readonly exec: GroupExecutor,
  ) {
    socket.setNoDelay(true);
    socket.on('data', (d) => this.onData(d));
    socket.on('error', () => socket.destroy());
  }

  private onData(d: Buffer): void {
    this.buf = Buffer.concat([this.buf, d]);
    for (;;) {
      if (!this.started) {
        // Startup-phase messages carry no type byte: length(int32) + code(int32) + payload.
        if (this.buf.length < 8) return;
        const len = this.buf.readInt32BE(0);
        if (this.buf.length < len) return;
        const code = this.buf.readInt32BE(4);
        const msg = this.buf.subarray(0, len);
        this.buf = this.buf.subarray(len);
        if (code === SSL_REQUEST) {
          this.socket.write('N');
          continue;
        }
        if (code === CANCEL_REQUEST) continue;
        this.started = true;
        this.send([msg]);
        continue;
      }
      if (this.buf.length < 5) return;
      const len = 1 + this.buf.readInt32BE(1);
      if (this.buf.length < len) return;
      const type = String.fromCharCode(this.buf[0]);
      this.pending.push(this.buf.subarray(0, len));
      this.buf = this.buf.subarray(len);
      if (FLUSH_TYPES.has(type)) {
        const group = this.pending;
        this.pending = [];
        this.send(group);
        if (type === 'X') this.socket.end();
      }
    }
  }

  /** Groups of one connection run in order; each waits for the previous one's answer. */
  private send(group: Buffer[]): void {
    const bytes = new Uint8Array(Buffer.concat(group));
    this.chain = this.chain.then(
      () =>
        new Promise<void>((done) =>
          this.exec.submit({
            conn: this.id,
            bytes,
            onData: (chunk) => {
              if (chunk.length && this.socket.writable) this.socket.write(Buffer.from(chunk));
            },
            done,
          }),
        ),
    );
  }
}
