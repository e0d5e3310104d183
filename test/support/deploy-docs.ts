import { spawnSync } from 'node:child_process';
import { appendFileSync, chmodSync, cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { podTemplatesOf, render, type K8sObject } from './k8s.rules';
import { REPO_ROOT } from './service-process';

/** One command line of a ```bash block of a document (continuations joined), with its heredoc if any. */
export interface DocStep {
  section: string;
  line: number;
  text: string;
  stdin?: string;
}

/**
 * The ```bash blocks of a Markdown document as command lines in order: `\` continuations joined, comments and
 * blank lines dropped, a `<<'EOF'` heredoc attached to its command as `stdin`.
 */
export function docSteps(markdown: string): DocStep[] {
  const lines = markdown.split('\n');
  const out: DocStep[] = [];
  let section = '';
  for (let i = 0; i < lines.length; i++) {
    if (/^#{1,3} /.test(lines[i])) section = lines[i].replace(/^#+ /, '');
    if (lines[i].trim() !== '```bash') continue;
    for (i++; i < lines.length && lines[i].trim() !== '```'; i++) {
      const start = i;
      let text = lines[i];
      while (text.endsWith('\\') && i + 1 < lines.length) text = text.slice(0, -1) + ' ' + lines[++i].trim();
      text = stripComment(text).trim();
      if (!text) continue;
      const here = /<<-?\s*'?(\w+)'?/.exec(text);
      let stdin: string | undefined;
      if (here) {
        const body: string[] = [];
        for (i++; i < lines.length && lines[i].trim() !== here[1]; i++) body.push(lines[i]);
        stdin = body.join('\n') + '\n';
        text = text.replace(here[0], '').trim();
      }
      out.push({ section, line: start + 1, text, stdin });
    }
  }
  return out;
}

/** A `#` comment outside quotes ends the line. */
function stripComment(s: string): string {
  let q: string | null = null;
  for (let i = 0; i < s.length; i++) {
    const c = s[i];
    if (q) {
      if (c === q) q = null;
    } else if (c === '"' || c === "'") q = c;
    else if (c === '#' && (i === 0 || /\s/.test(s[i - 1]))) return s.slice(0, i);
  }
  return s;
}

/** Split a line at `;`, `&&`, `||` and `&` outside quotes and `$(...)`; a trailing `&` only backgrounds. */
function splitCommands(s: string): string[] {
  const out: string[] = [];
  let q: string | null = null;
  let depth = 0;
  let cur = '';
  for (let i = 0; i < s.length; i++) {
    const c = s[i];
    if (q) {
      if (c === q) q = null;
      cur += c;
      continue;
    }
    if (c === '"' || c === "'") q = c;
    if (c === '$' && s[i + 1] === '(') depth++;
    if (c === ')' && depth) depth--;
    if (!depth && (c === ';' || c === '&' || (c === '|' && s[i + 1] === '|'))) {
      if (s[i + 1] === c) i++;
      out.push(cur.trim());
      cur = '';
      continue;
    }
    cur += c;
  }
  out.push(cur.trim());
  return out.filter(Boolean);
}

/** Shell words: quotes removed, `$...` left as written. */
function words(s: string): string[] {
  const out: string[] = [];
  let cur = '';
  let q: string | null = null;
  let any = false;
  for (const c of s) {
    if (q) {
      if (c === q) q = null;
      else cur += c;
    } else if (c === '"' || c === "'") {
      q = c;
      any = true;
    } else if (/\s/.test(c)) {
      if (cur || any) out.push(cur);
      cur = '';
      any = false;
    } else cur += c;
  }
  if (cur || any) out.push(cur);
  return out;
}

/** What a Helm chart or a manifest URL installs into the cluster. */
interface Installer {
  kinds?: string[];
  gpu?: string;
  services?: (release: string) => string[];
  /** Kinds that must be served before it installs (its own dependencies). */
  needs?: string[];
  /** Namespace it installs into (manifests with a fixed namespace). */
  namespace?: string;
}

/** The Helm charts and manifest URLs the deployment guide may use, and what each brings. */
export const INSTALLERS: Record<string, Installer> = {
  'jetstack/cert-manager': { kinds: ['cert-manager.io/v1 Certificate', 'cert-manager.io/v1 Issuer', 'cert-manager.io/v1 ClusterIssuer'] },
  'cnpg/cloudnative-pg': { kinds: ['postgresql.cnpg.io/v1 Cluster', 'postgresql.cnpg.io/v1 ScheduledBackup', 'postgresql.cnpg.io/v1 Backup', 'postgresql.cnpg.io/v1 Pooler'] },
  'https://github.com/cloudnative-pg/plugin-barman-cloud/releases/download/v0.16.0/manifest.yaml': {
    kinds: ['barmancloud.cnpg.io/v1 ObjectStore'],
    needs: ['cert-manager.io/v1 Certificate', 'postgresql.cnpg.io/v1 Cluster'],
    namespace: 'cnpg-system',
  },
  'prometheus-community/kube-prometheus-stack': {
    kinds: ['monitoring.coreos.com/v1 ServiceMonitor', 'monitoring.coreos.com/v1 PodMonitor', 'monitoring.coreos.com/v1 PrometheusRule'],
    services: (r) => [`${r}-grafana`, `${r}-prometheus`],
  },
  'kedacore/keda': { kinds: ['keda.sh/v1alpha1 ScaledObject', 'keda.sh/v1alpha1 TriggerAuthentication'] },
  'oci://registry.k8s.io/lws/charts/lws': { kinds: ['leaderworkerset.x-k8s.io/v1 LeaderWorkerSet'] },
  'jaegertracing/jaeger': { services: () => ['jaeger-collector', 'jaeger-query'] },
  'rocm/gpu-operator-charts': { gpu: 'amd.com/gpu' },
  'nvidia/gpu-operator': { gpu: 'nvidia.com/gpu' },
  'oci://quay.io/strimzi-helm/strimzi-kafka-operator': { kinds: ['kafka.strimzi.io/v1beta2 Kafka', 'kafka.strimzi.io/v1beta2 KafkaTopic'] },
};

/** API groups every cluster serves. */
const BUILTIN_GROUPS = new Set(['', 'apps', 'batch', 'policy', 'autoscaling', 'networking.k8s.io', 'rbac.authorization.k8s.io', 'storage.k8s.io', 'scheduling.k8s.io', 'coordination.k8s.io']);
/** `kubectl` resource names (as in `job/NAME`) and the kinds they mean. */
const RESOURCE_KINDS: Record<string, string> = {
  job: 'Job', deployment: 'Deployment', statefulset: 'StatefulSet', svc: 'Service', service: 'Service', pod: 'Pod', cluster: 'Cluster',
  leaderworkerset: 'LeaderWorkerSet', configmap: 'ConfigMap', secret: 'Secret', pvc: 'PersistentVolumeClaim', backups: 'Backup', backup: 'Backup',
};
const NEEDS_TOOL = new Set(['kubectl', 'helm', 'kustomize', 'docker', 'pnpm', 'openssl', 'kind']);
const SHELL = new Set(['command', 'cd', 'mkdir', 'cat', 'echo', 'export', 'bash', 'true']);
const groupOf = (apiVersion: string) => (apiVersion.includes('/') ? apiVersion.split('/')[0] : '');

/**
 * Follows a deployment guide's commands in order against a model of the cluster and of the operator's machine,
 * and reports every step that uses something no earlier step made: a tool, a Helm repository, a namespace, a
 * CRD, a GPU resource, a storage class, a Secret/ConfigMap/PVC a manifest references, an image that was never
 * built or loaded, a file, a port-forward, or credentials the secured NATS requires. `kubectl apply -k` renders
 * the real kustomization (files the guide writes are written in a scratch workspace linked to the repository);
 * `build-images.sh` runs for real with a stand-in `docker`; `rstar security init` runs the real CLI.
 */
export class DeployGuideWalker {
  readonly problems: string[] = [];
  private readonly ws = mkdtempSync(join(tmpdir(), 'rstar-deploy-docs-'));
  private readonly fakeBin = join(this.ws, '.bin');
  private cwd = this.ws;
  private readonly tools = new Set<string>();
  private readonly repos = new Set<string>();
  private readonly functions = new Map<string, string>();
  private readonly built = new Set<string>();
  private readonly pushed = new Set<string>();
  private secretsDir: string | null = null;
  private cluster = this.emptyCluster(false);
  private step: DocStep | null = null;

  constructor(private readonly kustomize: string[]) {
    for (const top of ['infra', 'configs', 'package.json']) symlinkSync(join(REPO_ROOT, top), join(this.ws, top));
    mkdirSync(this.fakeBin);
    writeFileSync(join(this.fakeBin, 'docker'), '#!/usr/bin/env bash\nif [ "$1" = inspect ]; then t="${@: -1}"; echo "${t%:*}@sha256:$(printf %s "$t" | sha256sum | cut -c1-64)"; fi\n');
    chmodSync(join(this.fakeBin, 'docker'), 0o755);
  }

  /** A cluster with nothing installed (a kind cluster comes with its default storage class). */
  private emptyCluster(kind: boolean) {
    return {
      kind,
      namespaces: new Set(['default', 'kube-system']),
      kinds: new Set<string>(),
      gpus: new Set<string>(),
      storageClasses: new Set<string>(),
      objects: new Map<string, K8sObject | null>(),
      loaded: new Set<string>(),
      portForwards: new Map<string, { ns: string; target: string }>(),
      secured: false,
    };
  }

  /** Remove the scratch workspace. */
  close(): void {
    rmSync(this.ws, { recursive: true, force: true });
  }

  /** Walk every step in order. @returns the problems found (empty when the guide works as written). */
  walk(steps: DocStep[]): string[] {
    for (const s of steps) {
      this.step = s;
      this.line(s.text, s.stdin);
    }
    return this.problems;
  }

  private fail(msg: string): void {
    this.problems.push(`${this.step!.section} (line ${this.step!.line}) \`${this.step!.text.slice(0, 90)}\`: ${msg}`);
  }

  private line(text: string, stdin?: string): void {
    const fn = /^(\w+)\(\)\s*\{(.*)\}\s*$/.exec(text);
    if (fn) return void this.functions.set(fn[1], fn[2]);
    const loop = /^for (\w+) in (.+?); do (.+); done$/.exec(text);
    if (loop) {
      for (const item of words(loop[2])) this.line(substitute(loop[3], { [loop[1]]: item }), stdin);
      return;
    }
    for (const c of splitCommands(text)) this.command(c, stdin);
  }

  private command(text: string, stdin?: string): void {
    for (const m of text.matchAll(/\$\(\s*(\S+)/g)) this.needTool(m[1]);
    const w = words(text);
    const env: Record<string, string> = {};
    while (w.length && /^[A-Za-z_]\w*=/.test(w[0])) {
      const [k, ...v] = w.shift()!.split('=');
      env[k] = v.join('=');
    }
    if (!w.length) return;
    const [prog, ...args] = w;
    const fn = this.functions.get(prog);
    if (fn) return this.line(substitute(fn, Object.fromEntries(args.map((a, i) => [String(i + 1), a]))), stdin);
    if (NEEDS_TOOL.has(prog)) this.needTool(prog);
    else if (!SHELL.has(prog)) return this.fail(`${prog}: not a command this guide installs or the walker knows`);
    switch (prog) {
      case 'command':
        if (args[0] === '-v') for (const t of args.slice(1)) this.tools.add(t);
        return;
      case 'cd':
        this.cwd = this.path(args[0] ?? this.ws);
        return;
      case 'mkdir':
        for (const a of args.filter((x) => !x.startsWith('-'))) mkdirSync(this.path(a), { recursive: true });
        return;
      case 'cat':
        return this.cat(text, args, stdin);
      case 'helm':
        return this.helm(args);
      case 'kubectl':
        return this.kubectl(args, stdin);
      case 'bash':
        return this.bashScript(args, env);
      case 'kind':
        return this.kind(args);
      case 'pnpm':
        return this.pnpm(args, env);
      default:
        return;
    }
  }

  private needTool(t: string): void {
    if (NEEDS_TOOL.has(t) && !this.tools.has(t)) this.fail(`uses ${t}, which no earlier step checks for or installs`);
  }

  /** A path as the guide means it: relative to the current directory; /tmp inside the workspace. */
  private path(p: string): string {
    if (isAbsolute(p)) return p.startsWith('/tmp/') ? join(this.ws, '_tmp', p.slice(5)) : p;
    return resolve(this.cwd, p);
  }

  private cat(text: string, args: string[], stdin?: string): void {
    const redirect = /(>>?)\s*(\S+)\s*$/.exec(text);
    if (!redirect) return;
    const target = this.path(redirect[2]);
    if (!existsSync(dirname(target))) return this.fail(`${redirect[2]}: its folder does not exist yet`);
    const sources = args.filter((a) => !a.startsWith('>') && a !== redirect[2]);
    let content = stdin ?? '';
    for (const s of sources) {
      if (!existsSync(this.path(s))) return this.fail(`${s} does not exist yet`);
      content += readFileSync(this.path(s), 'utf8');
    }
    if (redirect[1] === '>>') appendFileSync(target, content);
    else writeFileSync(target, content);
  }

  private helm(args: string[]): void {
    const [sub, ...rest] = args;
    if (sub === 'repo') {
      if (rest[0] === 'add') this.repos.add(rest[1]);
      return;
    }
    if (sub !== 'upgrade' && sub !== 'install') return;
    const pos = rest.filter((a, i) => !a.startsWith('-') && !['-n', '--namespace', '--set', '--version', '-f', '--values'].includes(rest[i - 1]));
    const [release, chart] = pos;
    const ns = flag(rest, '-n', '--namespace') ?? 'default';
    if (!chart.startsWith('oci://') && !this.repos.has(chart.split('/')[0])) this.fail(`chart ${chart}: its repository ${chart.split('/')[0]} was never added (helm repo add)`);
    if (!rest.includes('--create-namespace') && !this.cluster.namespaces.has(ns)) this.fail(`namespace ${ns} does not exist (no --create-namespace)`);
    this.cluster.namespaces.add(ns);
    this.install(chart, release, ns);
  }

  private install(what: string, release: string, ns: string): void {
    const inst = INSTALLERS[what];
    if (!inst) return this.fail(`${what}: the walker does not know what it installs (add it to INSTALLERS)`);
    for (const k of inst.needs ?? []) if (!this.cluster.kinds.has(k)) this.fail(`${what} needs ${k}, which no earlier step installed`);
    if (inst.namespace && !this.cluster.namespaces.has(inst.namespace)) this.fail(`${what} installs into namespace ${inst.namespace}, which does not exist yet`);
    for (const k of inst.kinds ?? []) this.cluster.kinds.add(k);
    if (inst.gpu) this.cluster.gpus.add(inst.gpu);
    for (const s of inst.services?.(release) ?? []) this.cluster.objects.set(key(ns, 'Service', s), null);
  }

  private kubectl(args: string[], stdin?: string): void {
    const nsFlag = flag(args, '-n', '--namespace');
    const pos = args.filter((a, i) => !a.startsWith('-') && !['-n', '--namespace', '-f', '-k', '--for', '--timeout', '-o', '--type'].includes(args[i - 1]) && !/^(-n|--namespace)$/.test(a));
    const ns = nsFlag ?? 'default';
    const [sub, ...rest] = pos;
    const needNs = () => {
      if (!this.cluster.namespaces.has(ns)) this.fail(`namespace ${ns} does not exist yet`);
    };
    switch (sub) {
      case 'create':
        if (rest[0] === 'namespace') return void this.cluster.namespaces.add(rest[1]);
        if (rest[0] === 'secret') {
          needNs();
          for (const a of args.filter((x) => x.startsWith('--from-file='))) {
            const file = a.slice('--from-file='.length).split('=').at(-1)!;
            if (!existsSync(this.path(file))) this.fail(`${file} does not exist yet`);
          }
          return void this.cluster.objects.set(key(ns, 'Secret', rest[2]), null);
        }
        return;
      case 'label':
        if (rest[0] === 'namespace') {
          if (!this.cluster.namespaces.has(rest[1])) this.fail(`namespace ${rest[1]} does not exist yet`);
        } else this.needObject(ns, rest[0], rest[1]);
        return;
      case 'apply': {
        const k = flag(args, '-k');
        const f = flag(args, '-f');
        if (k) return this.apply(this.render(this.path(k)), ns);
        if (f && /^https?:/.test(f)) return this.install(f, '', ns);
        if (f === '-' && stdin) return this.apply(parseObjects(stdin), ns);
        if (f) {
          if (!existsSync(this.path(f))) return this.fail(`${f} does not exist`);
          return this.apply(parseObjects(readFileSync(this.path(f), 'utf8')), ns);
        }
        return;
      }
      case 'get':
        if (rest[0] === 'storageclass') return void rest.slice(1).forEach((c) => this.cluster.storageClasses.add(c));
        if (rest[0] === 'nodes' || rest[0] === 'pods') return;
        needNs();
        if (rest.length === 1 && rest[0].includes('/')) return this.needObject(ns, ...(rest[0].split('/') as [string, string]));
        if (rest.length >= 2) return this.needObject(ns, rest[0], rest[1]);
        return this.needKind(rest[0]);
      case 'wait':
      case 'logs':
      case 'exec':
        needNs();
        for (const r of rest.filter((x) => x.includes('/'))) this.needObject(ns, ...(r.split('/') as [string, string]));
        return;
      case 'rollout':
        needNs();
        return this.needObject(ns, ...(rest[1].split('/') as [string, string]));
      case 'port-forward': {
        needNs();
        const [res, name] = rest[0].split('/');
        this.needObject(ns, res, name);
        for (const p of rest.slice(1)) this.cluster.portForwards.set(p.split(':')[0], { ns, target: name });
        return;
      }
      default:
        return;
    }
  }

  /** kustomize build of a folder, cached by its place in the workspace and its kustomization's text. */
  private render(dir: string): K8sObject[] {
    const file = join(dir, 'kustomization.yaml');
    const cacheKey = `${dir.startsWith(this.ws) ? dir.slice(this.ws.length) : dir}\n${existsSync(file) ? readFileSync(file, 'utf8') : ''}`;
    let objs = renderCache.get(cacheKey);
    if (!objs) renderCache.set(cacheKey, (objs = render(this.kustomize, dir)));
    return structuredClone(objs);
  }

  private needKind(resource: string): void {
    const kind = RESOURCE_KINDS[resource] ?? resource;
    if (['Cluster', 'Backup', 'LeaderWorkerSet'].includes(kind) && ![...this.cluster.kinds].some((k) => k.endsWith(` ${kind}`))) this.fail(`${kind}: no earlier step installed its CRD`);
  }

  private needObject(ns: string, resource: string, name: string): void {
    const kind = RESOURCE_KINDS[resource] ?? resource;
    this.needKind(resource);
    if (kind === 'Pod') {
      const owner = name.replace(/-\d+$/, '');
      if (!this.cluster.objects.has(key(ns, 'StatefulSet', owner))) this.fail(`pod ${name}: no StatefulSet ${owner} in ${ns}`);
      return;
    }
    if (!this.cluster.objects.has(key(ns, kind, name))) this.fail(`${kind} ${name} does not exist in namespace ${ns} yet`);
  }

  /** `kubectl apply` of rendered objects: every namespace, kind, GPU, class and reference must exist. */
  private apply(objs: K8sObject[], defaultNs: string): void {
    const nsOf = (o: K8sObject) => o.metadata.namespace ?? defaultNs;
    const incoming = new Set(objs.map((o) => key(nsOf(o), o.kind, o.metadata.name)));
    // What operators create from these objects: CloudNativePG a cluster's CA and server certificates.
    for (const o of objs.filter((x) => x.kind === 'Cluster' && x.apiVersion.startsWith('postgresql.cnpg.io/'))) {
      for (const s of ['ca', 'server', 'replication']) incoming.add(key(nsOf(o), 'Secret', `${o.metadata.name}-${s}`));
    }
    const newNamespaces = new Set(objs.filter((o) => o.kind === 'Namespace').map((o) => o.metadata.name));
    const exists = (ns: string, kind: string, name: string) => this.cluster.objects.has(key(ns, kind, name)) || incoming.has(key(ns, kind, name));
    const need = (o: K8sObject, kind: string, name: string | undefined, optional = false) => {
      if (name && !optional && !exists(nsOf(o), kind, name)) this.fail(`${o.kind}/${o.metadata.name} needs ${kind} ${name} in ${nsOf(o)}, which no earlier step created`);
    };
    for (const o of objs) {
      const ns = nsOf(o);
      if (o.kind !== 'Namespace' && !this.cluster.namespaces.has(ns) && !newNamespaces.has(ns)) this.fail(`${o.kind}/${o.metadata.name}: namespace ${ns} does not exist`);
      if (!BUILTIN_GROUPS.has(groupOf(o.apiVersion)) && !this.cluster.kinds.has(`${o.apiVersion} ${o.kind}`)) this.fail(`${o.kind}/${o.metadata.name}: no earlier step installed the CRD of ${o.apiVersion} ${o.kind}`);
      if (o.kind === 'PersistentVolumeClaim' && o.spec.storageClassName && !this.cluster.storageClasses.has(o.spec.storageClassName)) this.fail(`PersistentVolumeClaim/${o.metadata.name}: storage class ${o.spec.storageClassName} was never checked or created`);
      if (o.kind === 'ServiceAccount') for (const s of (o as any).imagePullSecrets ?? []) need(o, 'Secret', s.name);
      for (const { pod } of podTemplatesOf(o)) this.checkPod(o, pod, need);
      if (o.kind === 'Cluster') {
        need(o, 'Secret', o.spec.bootstrap?.initdb?.secret?.name);
        need(o, 'Secret', o.spec.superuserSecret?.name);
        for (const r of o.spec.managed?.roles ?? []) need(o, 'Secret', r.passwordSecret?.name);
        for (const p of o.spec.plugins ?? []) if (p.parameters?.barmanObjectName) need(o, 'ObjectStore', p.parameters.barmanObjectName);
      }
      if (o.kind === 'ObjectStore') for (const ref of Object.values(o.spec.configuration?.s3Credentials ?? {}) as { name?: string }[]) need(o, 'Secret', ref?.name);
    }
    for (const k of incoming) if (!this.cluster.objects.has(k)) this.cluster.objects.set(k, null);
    for (const o of objs) {
      if (o.kind === 'Namespace') this.cluster.namespaces.add(o.metadata.name);
      this.cluster.objects.set(key(nsOf(o), o.kind, o.metadata.name), o);
      if (o.kind === 'NetworkPolicy') this.cluster.secured = true;
    }
  }

  private checkPod(o: K8sObject, pod: any, need: (o: K8sObject, kind: string, name: string | undefined, optional?: boolean) => void): void {
    need(o, 'ServiceAccount', pod.serviceAccountName);
    for (const s of pod.imagePullSecrets ?? []) need(o, 'Secret', s.name);
    for (const v of pod.volumes ?? []) {
      need(o, 'PersistentVolumeClaim', v.persistentVolumeClaim?.claimName);
      if (v.secret) need(o, 'Secret', v.secret.secretName, v.secret.optional);
      if (v.configMap) need(o, 'ConfigMap', v.configMap.name, v.configMap.optional);
      for (const s of v.projected?.sources ?? []) {
        if (s.secret) need(o, 'Secret', s.secret.name, s.secret.optional);
        if (s.configMap) need(o, 'ConfigMap', s.configMap.name, s.configMap.optional);
      }
    }
    for (const c of [...(pod.initContainers ?? []), ...(pod.containers ?? [])]) {
      for (const e of c.env ?? []) {
        const sk = e.valueFrom?.secretKeyRef;
        const ck = e.valueFrom?.configMapKeyRef;
        if (sk) need(o, 'Secret', sk.name, sk.optional);
        if (ck) need(o, 'ConfigMap', ck.name, ck.optional);
      }
      for (const e of c.envFrom ?? []) {
        if (e.secretRef) need(o, 'Secret', e.secretRef.name, e.secretRef.optional);
        if (e.configMapRef) need(o, 'ConfigMap', e.configMapRef.name, e.configMapRef.optional);
      }
      for (const part of ['requests', 'limits']) for (const r of Object.keys(c.resources?.[part] ?? {})) if (r.includes('/') && !this.cluster.gpus.has(r)) this.fail(`${o.kind}/${o.metadata.name}: asks for ${r}, which no earlier step's device plugin provides`);
      const image: string = c.image;
      const repo = image.split('@')[0].replace(/:[^/:]+$/, '');
      if (/(^|\/)rstar\//.test(repo) || /\/(control-plane|policy-serving|tool-execution|reward-grading|resampling|optimization|trainer)$/.test(repo)) {
        const ok = this.cluster.kind ? this.cluster.loaded.has(image) : this.pushed.has(image);
        if (!ok) this.fail(`${o.kind}/${o.metadata.name}: image ${image} was never ${this.cluster.kind ? 'loaded into the kind cluster' : 'built and pushed (by digest)'} by an earlier step`);
      }
    }
  }

  /** Only infra/docker/build-images.sh is run (for real, with a stand-in docker); other scripts are refused. */
  private bashScript(args: string[], env: Record<string, string>): void {
    if (args[0] !== 'infra/docker/build-images.sh') return this.fail(`bash ${args[0]}: the walker runs only infra/docker/build-images.sh`);
    this.needTool('docker');
    const digests = env.RSTAR_DIGESTS_OUT ? this.path(env.RSTAR_DIGESTS_OUT) : undefined;
    if (digests) mkdirSync(dirname(digests), { recursive: true });
    const r = spawnSync('bash', [join(REPO_ROOT, args[0]), ...args.slice(1)], {
      encoding: 'utf8',
      env: { ...process.env, ...env, ...(digests ? { RSTAR_DIGESTS_OUT: digests } : {}), PATH: `${this.fakeBin}:${process.env.PATH}` },
    });
    if (r.status !== 0) return this.fail(`build-images.sh failed: ${r.stderr.trim()}`);
    for (const m of r.stdout.matchAll(/^build-images: (\S+)$/gm)) this.built.add(m[1]);
    for (const m of r.stdout.matchAll(/^build-images: \S+ -> (\S+)$/gm)) this.pushed.add(m[1]);
  }

  private kind(args: string[]): void {
    if (args[0] === 'create' && args[1] === 'cluster') {
      this.cluster = this.emptyCluster(true);
      this.cluster.storageClasses.add('standard');
      return;
    }
    if (args[0] === 'load' && args[1] === 'docker-image') {
      if (!this.cluster.kind) return this.fail('no kind cluster was created');
      for (const img of args.slice(2)) {
        if (!this.built.has(img)) this.fail(`image ${img} was never built by an earlier step`);
        this.cluster.loaded.add(img);
      }
    }
  }

  private pnpm(args: string[], env: Record<string, string>): void {
    if (args[0] !== 'rstar') return;
    if (args[1] === 'security' && args[2] === 'init') {
      const out = this.path(flag(args, '--out')!);
      if (!securityInitCache) {
        const dir = mkdtempSync(join(tmpdir(), 'rstar-security-init-'));
        const r = spawnSync('pnpm', ['rstar', 'security', 'init', '--out', join(dir, 'out')], { cwd: REPO_ROOT, encoding: 'utf8' });
        if (r.status !== 0) return this.fail(`rstar security init failed: ${r.stderr.trim()}`);
        securityInitCache = join(dir, 'out');
      }
      if (existsSync(out)) return this.fail(`${out} exists: rstar security init never overwrites keys`);
      cpSync(securityInitCache, out, { recursive: true });
      this.secretsDir = out;
      return;
    }
    if (args[1] === 'train') {
      const config = flag(args, '--config');
      if (config && !existsSync(this.path(config))) this.fail(`${config} does not exist`);
      const remote = flag(args, '--remote');
      if (!remote) return;
      const u = new URL(remote);
      const fwd = this.cluster.portForwards.get(u.port);
      if (['127.0.0.1', 'localhost'].includes(u.hostname)) {
        if (!fwd || !/^nats/.test(fwd.target)) return this.fail(`nothing forwards ${u.host} to NATS (kubectl port-forward svc/nats-client ${u.port}:4222 first)`);
      }
      if (this.cluster.secured) {
        const dir = env.RSTAR_SECRETS_DIR ? this.path(env.RSTAR_SECRETS_DIR) : null;
        if (!dir || !this.secretsDir || dir !== join(this.secretsDir, 'cli') || !existsSync(join(dir, 'nats.nk'))) {
          this.fail("the secured NATS admits only known users: run it with RSTAR_SECRETS_DIR=<the folder of rstar security init>/cli (the CLI's credentials)");
        }
      }
    }
  }
}

/** `--flag VALUE` or `--flag=VALUE` (or the short form), else undefined. */
function flag(args: string[], ...names: string[]): string | undefined {
  for (let i = 0; i < args.length; i++) {
    for (const n of names) {
      if (args[i] === n) return args[i + 1];
      if (args[i].startsWith(`${n}=`)) return args[i].slice(n.length + 1);
    }
  }
  return undefined;
}

const key = (ns: string, kind: string, name: string) => `${ns}/${kind}/${name}`;

/** Renders by folder (relative to the workspace) and kustomization text: walks of the same guide share them. */
const renderCache = new Map<string, K8sObject[]>();
/** The output of one real `rstar security init`, copied for every later walk (it takes seconds). */
let securityInitCache: string | null = null;

/** Replace `$v`, `${v}` and `${v//-/_}` by the values given (function arguments, a loop variable). */
function substitute(body: string, vars: Record<string, string>): string {
  let out = body;
  for (const [k, v] of Object.entries(vars)) {
    out = out.split(`\${${k}//-/_}`).join(v.replace(/-/g, '_')).split(`\${${k}}`).join(v).replace(new RegExp(`\\$${k}(?![\\w])`, 'g'), v);
  }
  return out;
}

function parseObjects(text: string): K8sObject[] {
  return parseAllDocuments(text).map((d) => d.toJS() as K8sObject | null).filter((o): o is K8sObject => !!o);
}

/** Forget the shared renders and remove the cached `rstar security init` output (afterAll of a spec). */
export function clearDeployDocsCaches(): void {
  renderCache.clear();
  if (securityInitCache) rmSync(dirname(securityInitCache), { recursive: true, force: true });
  securityInitCache = null;
}
