import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freeLocalPort, portOpen, until, waitExit } from '@rstar/testing';
import { REPO_ROOT } from './service-process';

/** The node config every node of a local cluster shares (infra/local/nats-cluster.sh uses it too). */
export const CLUSTER_NODE_CONF = join(REPO_ROOT, 'infra/nats/cluster-node.conf');

interface Node {
  name: string;
  clientPort: number;
  routePort: number;
  monitorPort: number;
  storeDir: string;
  child: ChildProcess | null;
  out: string;
}

/**
 * A 3-node NATS JetStream cluster on loopback for failover tests: three `nats-server -c
 * infra/nats/cluster-node.conf` processes on free ports (client, route, monitoring), each with its own
 * store directory under one temporary folder, joined by routes. A node can be SIGKILLed and started
 * again on the same ports and store (it rejoins and catches up from its peers).
 */
export class NatsCluster {
  private constructor(
    private readonly nodes: Node[],
    private readonly root: string,
  ) {}

  /** Start the three nodes and wait until JetStream has a meta leader. @throws Error naming the node that did not come up. */
  static async start(): Promise<NatsCluster> {
    const root = mkdtempSync(join(tmpdir(), 'rstar-nats-cluster-'));
    const nodes: Node[] = [];
    for (let i = 1; i <= 3; i++) {
      const storeDir = join(root, `n${i}`);
      mkdirSync(storeDir);
      nodes.push({ name: `n${i}`, clientPort: await freeLocalPort(), routePort: await freeLocalPort(), monitorPort: await freeLocalPort(), storeDir, child: null, out: '' });
    }
    const cluster = new NatsCluster(nodes, root);
    for (const n of nodes) cluster.spawn(n);
    for (const n of nodes) await cluster.waitListening(n);
    await until(async () => (await cluster.jsz(nodes[0]))?.meta_cluster?.leader, 'the NATS cluster to elect a JetStream meta leader', { timeoutMs: 30_000, everyMs: 200 });
    return cluster;
  }

  /** Every node's client URL, comma-separated (what RSTAR_NATS_URL takes). */
  get url(): string {
    return this.nodes.map((n) => `nats://127.0.0.1:${n.clientPort}`).join(',');
  }

  /** The node names, `n1`..`n3`. */
  get names(): string[] {
    return this.nodes.map((n) => n.name);
  }

  private node(name: string): Node {
    const n = this.nodes.find((x) => x.name === name);
    if (!n) throw new Error(`no node "${name}" in the cluster (nodes: ${this.names.join(', ')})`);
    return n;
  }

  private spawn(n: Node): void {
    const routes = Object.fromEntries(this.nodes.map((x, i) => [`RSTAR_NATS_ROUTE_${i + 1}`, `nats-route://127.0.0.1:${x.routePort}`]));
    const child = spawn('nats-server', ['-c', CLUSTER_NODE_CONF], {
      env: {
        ...process.env, ...routes, RSTAR_NATS_NODE: n.name, RSTAR_NATS_CLIENT_PORT: String(n.clientPort),
        RSTAR_NATS_ROUTE_PORT: String(n.routePort), RSTAR_NATS_MONITOR_PORT: String(n.monitorPort), RSTAR_NATS_STORE_DIR: n.storeDir,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    n.out = '';
    const keep = (b: Buffer) => (n.out = (n.out + b.toString()).slice(-16_000));
    child.stdout!.on('data', keep);
    child.stderr!.on('data', keep);
    n.child = child;
  }

  private async waitListening(n: Node): Promise<void> {
    await until(
      async () => {
        if (n.child && n.child.exitCode !== null) throw new Error(`nats-server ${n.name} exited (${n.child.exitCode}):\n${n.out}`);
        return portOpen(n.clientPort);
      },
      `nats-server ${n.name} to listen on ${n.clientPort}`,
      { timeoutMs: 15_000, everyMs: 100 },
    );
  }

  /** The node's `/jsz` monitoring answer (undefined while it does not answer). */
  async jsz(n: Node | string, query = ''): Promise<Record<string, any> | undefined> {
    const node = typeof n === 'string' ? this.node(n) : n;
    try {
      const r = await fetch(`http://127.0.0.1:${node.monitorPort}/jsz${query}`, { signal: AbortSignal.timeout(2_000) });
      return r.ok ? ((await r.json()) as Record<string, any>) : undefined;
    } catch {
      return undefined;
    }
  }

  /** Client connections a node holds now (its `/connz`), 0 when it does not answer. */
  async clients(name: string): Promise<number> {
    try {
      const r = await fetch(`http://127.0.0.1:${this.node(name).monitorPort}/connz`, { signal: AbortSignal.timeout(2_000) });
      return r.ok ? Number(((await r.json()) as { num_connections: number }).num_connections) : 0;
    } catch {
      return 0;
    }
  }

  /** Whether the node's process runs. */
  running(name: string): boolean {
    const c = this.node(name).child;
    return !!c && c.exitCode === null && c.signalCode === null;
  }

  /** SIGKILL one node (a lost machine: no goodbye to its peers or clients) and wait until it is gone. */
  async kill(name: string): Promise<void> {
    const n = this.node(name);
    if (!n.child) return;
    n.child.kill('SIGKILL');
    await waitExit(n.child, 30_000);
  }

  /** Start a stopped node again on its ports and store. */
  async restart(name: string): Promise<void> {
    const n = this.node(name);
    if (this.running(name)) throw new Error(`node ${name} still runs; kill it first`);
    this.spawn(n);
    await this.waitListening(n);
  }

  /** The last lines a node printed (for failure messages). */
  output(name: string): string {
    return this.node(name).out;
  }

  /** SIGTERM every node (SIGKILL after 5 s) and delete the stores. Never throws. */
  async stop(): Promise<void> {
    await Promise.all(
      this.nodes.map(async (n) => {
        if (!n.child || n.child.exitCode !== null || n.child.signalCode !== null) return;
        n.child.kill('SIGTERM');
        const t = setTimeout(() => n.child?.kill('SIGKILL'), 5_000);
        await waitExit(n.child, 30_000);
        clearTimeout(t);
      }),
    );
    rmSync(this.root, { recursive: true, force: true });
  }
}
