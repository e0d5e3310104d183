import { PGlite } from '@electric-sql/pglite';
import { PGLiteSocketServer } from '@electric-sql/pglite-socket';

/** A running embedded Postgres (PGlite) reachable over TCP by any `pg` client. */
export interface EmbeddedPostgres {
  /** `postgres://postgres@127.0.0.1:<port>/postgres` */
  url: string;
  /** Stop the socket server, then close PGlite (flushing `dataDir`). */
  close(): Promise<void>;
}

export interface EmbeddedPostgresOptions {
  /** Directory for the database files; omitted = in memory (gone on close). */
  dataDir?: string;
  /** TCP port (default 0 = any free port). */
  port?: number;
  /** Concurrent client connections the socket server accepts (default 64; PGlite runs them one at a time). */
  maxConnections?: number;
}

/**
 * Start PGlite behind pglite-socket (standalone mode, ARCHITECTURE §4), so the same `pg` code runs on
 * it as on real Postgres. PGlite is single-session: queries of all connections are serialised and a
 * transaction holds the database until it ends. COPY does not work over the socket.
 */
export async function startEmbeddedPostgres(opts: EmbeddedPostgresOptions = {}): Promise<EmbeddedPostgres> {
  const db = await PGlite.create(opts.dataDir ? { dataDir: opts.dataDir } : {});
  const server = new PGLiteSocketServer({ db, host: '127.0.0.1', port: opts.port ?? 0, maxConnections: opts.maxConnections ?? 64 });
  await server.start();
  const conn = server.getServerConn();
  return {
    url: `postgres://postgres@${conn}/postgres`,
    close: async () => {
      await server.stop();
      await db.close();
    },
  };
}
