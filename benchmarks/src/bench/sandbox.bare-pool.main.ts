import { createServer } from 'node:http';
import { SandboxPool } from '@rstar/sandbox';

/**
 * Entry of `pnpm bench sandbox`'s HTTP floor with the pool behind it: a bare `node:http` server (no
 * framework, no tracing, no auth, no validation past `JSON.parse`) in its own process that runs each
 * `POST` body through a `SandboxPool` built with the defaults the service uses, and answers the
 * `ExecResult` as JSON. Whatever the service costs over this is the service's own; what this costs over
 * the library is the price of any HTTP service in front of the pool on this host (the extra process
 * and its wake-ups), which no change to the service can remove. Prints `{"port":N}` once listening.
 */
async function main(): Promise<void> {
  const pool = new SandboxPool({});
  await pool.start();
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (d: Buffer) => chunks.push(d));
    req.on('end', () => {
      void pool.execute(JSON.parse(Buffer.concat(chunks).toString('utf8'))).then((r) => {
        const json = JSON.stringify(r);
        res.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(json) });
        res.end(json);
      });
    });
  });
  server.listen(0, '127.0.0.1', () => process.stdout.write(JSON.stringify({ port: (server.address() as { port: number }).port }) + '\n'));
  process.once('SIGTERM', () => {
    server.close();
    void pool.close().then(() => process.exit(0));
  });
}

void main();
