import { spawn, type ChildProcess } from 'node:child_process';
import { request, type Agent } from 'node:http';
import { resolve } from 'node:path';
import { createInterface } from 'node:readline';

/**
 * The floor of one HTTP hop, for `pnpm bench sandbox`'s lone-call figures: a bare `node:http` server in
 * its own process (no framework, no tracing, no auth) that reads a JSON body, parses it and answers a
 * fixed JSON object of an `ExecResult`'s size. A call to it costs what any HTTP service costs at the
 * least on this host at this moment: the client's request and parse, two process wake-ups (client ->
 * server, server -> client) through loopback TCP, and the server's parse and answer.
 * @returns its `http://127.0.0.1:<port>` URL and a `stop()`; rejects when the process ends before listening.
 */
export async function startBareHttpServer(): Promise<{ url: string; proc: ChildProcess; stop: () => Promise<void> }> {
  const src = `
const http = require('node:http');
const answer = JSON.stringify({ status: 'ok', stdout: '', stderr: '', exitCode: 0, signal: null, wallMs: 1.2, cpuMs: 0.8, truncated: false });
http.createServer((req, res) => {
  const chunks = [];
  req.on('data', (d) => chunks.push(d));
  req.on('end', () => {
    if (chunks.length) JSON.parse(Buffer.concat(chunks).toString('utf8'));
    res.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(answer) });
    res.end(answer);
  });
}).listen(0, '127.0.0.1', function () { process.stdout.write(JSON.stringify({ port: this.address().port }) + '\\n'); });
`;
  return serverOnLoopback(spawn(process.execPath, ['-e', src], { stdio: ['ignore', 'pipe', 'inherit'] }), 'the bare HTTP server');
}

/**
 * Wait for a server process's first stdout line, `{"port":N}`.
 * @returns its loopback URL, the process and a `stop()` (SIGTERM, resolves on exit); rejects, naming
 * `what`, when the process ends before that line.
 */
async function serverOnLoopback(proc: ChildProcess, what: string): Promise<{ url: string; proc: ChildProcess; stop: () => Promise<void> }> {
  const port = await new Promise<number>((ok, fail) => {
    createInterface({ input: proc.stdout! }).once('line', (l) => ok((JSON.parse(l) as { port: number }).port));
    proc.once('exit', (c) => fail(new Error(`${what} exited with code ${c} before listening`)));
  });
  const stop = () =>
    new Promise<void>((done) => {
      if (proc.exitCode !== null) return done();
      proc.once('exit', () => done());
      proc.kill('SIGTERM');
    });
  return { url: `http://127.0.0.1:${port}`, proc, stop };
}

/**
 * The floor of an HTTP service in front of the pool, for `pnpm bench sandbox`: a bare `node:http`
 * server in its own process with a default `SandboxPool` behind it (`sandbox.bare-pool.main.ts`). The
 * gap between it and the library is what the extra process costs on this host; the gap between the
 * service and it is what the service itself costs.
 * @returns its `http://127.0.0.1:<port>` URL and a `stop()`; rejects when the process ends before listening.
 */
export async function startBarePoolServer(): Promise<{ url: string; proc: ChildProcess; stop: () => Promise<void> }> {
  const main = resolve(__dirname, 'sandbox.bare-pool.main.ts');
  return serverOnLoopback(spawn(process.execPath, ['--import', 'tsx', main], { stdio: ['ignore', 'pipe', 'inherit'] }), 'the bare pool server');
}

/**
 * `GET url` through `agent` (keep-alive), body read and parsed as JSON.
 * @throws Error when the answer is not JSON or the connection fails.
 */
export function httpGetJson(url: string, agent: Agent): Promise<unknown> {
  const u = new URL(url);
  return new Promise((done, fail) => {
    const r = request({ host: u.hostname, port: u.port, path: u.pathname, method: 'GET', agent }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (d: Buffer) => chunks.push(d));
      res.on('end', () => {
        try {
          done(JSON.parse(Buffer.concat(chunks).toString('utf8')));
        } catch (e) {
          fail(e as Error);
        }
      });
    });
    r.on('error', fail);
    r.end();
  });
}

/** p50 and p99 in ms of one side of {@link loneInterleaved}. */
export interface LoneFigures {
  p50: number;
  p99: number;
}

/**
 * `n` rounds; each round makes one lone call (nothing else in flight) of every side in turn, so every
 * side sees the same background load, call by call. Latency is from the call to its settled result.
 * @returns p50 and p99 per side, in ms, keyed as `sides`.
 */
export async function loneInterleaved<K extends string>(n: number, sides: Record<K, () => Promise<unknown>>): Promise<Record<K, LoneFigures>> {
  const keys = Object.keys(sides) as K[];
  const lat = Object.fromEntries(keys.map((k) => [k, [] as number[]])) as Record<K, number[]>;
  for (let i = 0; i < n; i++)
    for (const k of keys) {
      const t = performance.now();
      await sides[k]();
      lat[k].push(performance.now() - t);
    }
  const at = (xs: number[], p: number) => {
    const s = [...xs].sort((a, b) => a - b);
    return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!;
  };
  return Object.fromEntries(keys.map((k) => [k, { p50: at(lat[k], 50), p99: at(lat[k], 99) }])) as Record<K, LoneFigures>;
}
