import { spawn, type ChildProcess } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freeLocalPort, isRunning, TOOLS_DIR, until } from '@rstar/testing';
import type { K8sObject } from './k8s.rules';

/** Where infra/local/install-kube-apiserver.sh puts the binary. */
export const KUBE_APISERVER_BIN = join(TOOLS_DIR, 'kube-apiserver', 'bin', 'kube-apiserver');
const ETCD_BIN = ['/usr/bin/etcd', '/usr/local/bin/etcd'].find((p) => existsSync(p)) ?? null;

/** Why the server-side dry-run cannot run here, or null when kube-apiserver and etcd are installed. */
export function kubeApiserverMissing(): string | null {
  if (!existsSync(KUBE_APISERVER_BIN)) return `kube-apiserver is not installed in ${TOOLS_DIR}: run bash infra/local/install-kube-apiserver.sh`;
  if (!ETCD_BIN) return 'etcd is not installed: apt-get install etcd-server (infra/local/install-kube-apiserver.sh does it as root)';
  return null;
}

/** One API call's answer: HTTP status and the parsed body (a Kubernetes `Status` on errors). */
export interface ApiAnswer {
  status: number;
  body: any;
}

/** Where an object of one group/version/kind lives in the API (from discovery). */
interface ApiResource {
  path: string;
  name: string;
  namespaced: boolean;
}

/**
 * A real kube-apiserver (built from k8s.io/kubernetes) over a private etcd on loopback, for server-side
 * dry-runs of the rendered manifests: everything an API server checks before it stores an object (schemas with
 * strict field validation, defaulting, cross-field validation such as a Deployment's selector against its
 * template, admission, namespaces that exist, CRDs that are installed). No controllers run, so nothing is
 * scheduled. Bearer-token auth, AlwaysAllow authorization; TLS with the server's own self-signed certificate.
 */
export class KubeApiserver {
  private etcd: ChildProcess | null = null;
  private apiserver: ChildProcess | null = null;
  private readonly dir = mkdtempSync(join(tmpdir(), 'rstar-kas-'));
  private port = 0;
  private readonly token = 'rstar-test-admin-token';
  private ca: Buffer | null = null;
  private readonly resources = new Map<string, ApiResource>();
  log = '';

  /** Start etcd and kube-apiserver; resolves once `/readyz` answers ok. @throws Error with the servers' output. */
  async start(timeoutMs = 180_000): Promise<void> {
    const missing = kubeApiserverMissing();
    if (missing) throw new Error(missing);
    const [etcdPort, peerPort] = [await freeLocalPort(), await freeLocalPort()];
    this.port = await freeLocalPort();
    this.etcd = spawn(ETCD_BIN!, [
      '--data-dir', join(this.dir, 'etcd'), '--name', 'rstar-test',
      '--listen-client-urls', `http://127.0.0.1:${etcdPort}`, '--advertise-client-urls', `http://127.0.0.1:${etcdPort}`,
      '--listen-peer-urls', `http://127.0.0.1:${peerPort}`, '--initial-advertise-peer-urls', `http://127.0.0.1:${peerPort}`,
      '--initial-cluster', `rstar-test=http://127.0.0.1:${peerPort}`, '--unsafe-no-fsync', '--log-level', 'warn',
    ], { stdio: ['ignore', 'pipe', 'pipe'] });
    this.collect(this.etcd, 'etcd');
    // The service-account token signer needs a key pair; the server generates its own serving certificate.
    const { publicKey, privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    writeFileSync(join(this.dir, 'sa.pub'), publicKey.export({ type: 'spki', format: 'pem' }));
    writeFileSync(join(this.dir, 'sa.key'), privateKey.export({ type: 'pkcs8', format: 'pem' }));
    writeFileSync(join(this.dir, 'tokens.csv'), `${this.token},rstar-admin,rstar-admin,system:masters\n`);
    this.apiserver = spawn(KUBE_APISERVER_BIN, [
      `--etcd-servers=http://127.0.0.1:${etcdPort}`, '--bind-address=127.0.0.1', '--advertise-address=127.0.0.1',
      `--secure-port=${this.port}`, `--cert-dir=${join(this.dir, 'certs')}`, `--token-auth-file=${join(this.dir, 'tokens.csv')}`,
      '--authorization-mode=RBAC', '--service-account-issuer=https://kubernetes.default.svc.cluster.local',
      `--service-account-key-file=${join(this.dir, 'sa.pub')}`, `--service-account-signing-key-file=${join(this.dir, 'sa.key')}`,
      '--service-cluster-ip-range=10.96.0.0/16', '--allow-privileged=true', '--v=0',
    ], { stdio: ['ignore', 'pipe', 'pipe'] });
    this.collect(this.apiserver, 'kube-apiserver');
    await until(async () => {
      for (const [name, p] of [['etcd', this.etcd], ['kube-apiserver', this.apiserver]] as const)
        if (!isRunning(p!)) throw new Error(`${name} exited (code ${p!.exitCode}):\n${this.log.slice(-4000)}`);
      const crt = join(this.dir, 'certs', 'apiserver.crt');
      if (!existsSync(crt)) return false;
      this.ca ??= readFileSync(crt);
      const r = await this.call('GET', '/readyz').catch(() => null);
      return r?.status === 200;
    }, 'kube-apiserver /readyz', { timeoutMs, everyMs: 500 });
  }

  /** Stop both servers and remove their data. */
  async stop(): Promise<void> {
    for (const p of [this.apiserver, this.etcd]) {
      if (p && isRunning(p)) {
        p.kill('SIGTERM');
        await new Promise((r) => p.once('exit', r));
      }
    }
    rmSync(this.dir, { recursive: true, force: true });
  }

  /** One HTTPS call to the API server as the admin token. */
  call(method: string, path: string, body?: unknown, contentType = 'application/json'): Promise<ApiAnswer> {
    const data = body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body);
    return new Promise((ok, fail) => {
      const req = request({
        host: '127.0.0.1', port: this.port, path, method, ca: this.ca ?? undefined, servername: 'localhost', checkServerIdentity: () => undefined,
        headers: { authorization: `Bearer ${this.token}`, accept: 'application/json', ...(data ? { 'content-type': contentType, 'content-length': Buffer.byteLength(data) } : {}) },
      }, (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c) => (text += c));
        res.on('end', () => {
          let parsed: unknown = text;
          try { parsed = JSON.parse(text); } catch { /* plain text (e.g. /readyz) */ }
          ok({ status: res.statusCode ?? 0, body: parsed });
        });
      });
      req.on('error', fail);
      req.end(data);
    });
  }

  /**
   * Create `obj` for real (e.g. a Namespace or a CRD the dry-run needs), or with `dryRun` only check it:
   * server-side apply (`application/apply-patch+yaml`, JSON is valid YAML) with strict field validation.
   * @returns the API's answer; status 200/201 means the server accepted it.
   */
  async apply(obj: K8sObject, opts: { dryRun: boolean }): Promise<ApiAnswer> {
    const res = await this.resourceOf(obj.apiVersion, obj.kind);
    if (!res) return { status: 404, body: { message: `the API server does not serve ${obj.apiVersion} ${obj.kind} (CRD not installed?)` } };
    const ns = (obj.metadata as { namespace?: string }).namespace ?? 'default';
    const path = `${res.path}${res.namespaced ? `/namespaces/${ns}` : ''}/${res.name}/${encodeURIComponent(obj.metadata.name)}`;
    const q = `fieldManager=rstar-test&fieldValidation=Strict&force=true${opts.dryRun ? '&dryRun=All' : ''}`;
    return this.call('PATCH', `${path}?${q}`, obj, 'application/apply-patch+yaml');
  }

  /** Wait until the API serves every CRD `names` (`<plural>.<group>`) as Established. */
  async waitEstablished(names: string[]): Promise<void> {
    await until(async () => {
      for (const n of names) {
        const r = await this.call('GET', `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${n}`);
        if (!r.body?.status?.conditions?.some((c: { type: string; status: string }) => c.type === 'Established' && c.status === 'True')) return false;
      }
      this.resources.clear();
      return true;
    }, `CRDs established: ${names.join(', ')}`, { timeoutMs: 60_000, everyMs: 300 });
  }

  /** Discovery: the resource path of `apiVersion` + `kind`, or null when not served. */
  private async resourceOf(apiVersion: string, kind: string): Promise<ApiResource | null> {
    const key = `${apiVersion} ${kind}`;
    if (!this.resources.has(key)) {
      const path = apiVersion.includes('/') ? `/apis/${apiVersion}` : `/api/${apiVersion}`;
      const r = await this.call('GET', path);
      if (r.status !== 200) return null;
      for (const x of r.body.resources as { name: string; kind: string; namespaced: boolean }[]) {
        if (!x.name.includes('/')) this.resources.set(`${apiVersion} ${x.kind}`, { path, name: x.name, namespaced: x.namespaced });
      }
    }
    return this.resources.get(key) ?? null;
  }

  private collect(p: ChildProcess, name: string): void {
    const add = (c: Buffer) => {
      this.log = (this.log + `[${name}] ${c.toString()}`).slice(-64_000);
    };
    p.stdout?.on('data', add);
    p.stderr?.on('data', add);
  }
}
