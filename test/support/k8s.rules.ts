import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { REPO_ROOT } from './service-process';

/** A rendered Kubernetes object (only what the rules read is typed). */
export interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string> };
  spec?: any;
  data?: Record<string, string>;
  [k: string]: unknown;
}

/** The GPU resource names the rules know. */
export const GPU_RESOURCES = ['amd.com/gpu', 'nvidia.com/gpu'] as const;

/**
 * How to run kustomize here: the pinned binary infra/local/install-infra-tools.sh puts in .tools/bin, one on
 * the PATH, or `kubectl kustomize` (kubectl embeds kustomize v5); null when none is there.
 */
export function kustomizeCommand(): string[] | null {
  const local = join(REPO_ROOT, '.tools/bin/kustomize');
  if (existsSync(local)) return [local, 'build'];
  if (spawnSync('kustomize', ['version'], { encoding: 'utf8' }).status === 0) return ['kustomize', 'build'];
  if (spawnSync('kubectl', ['kustomize', '--help'], { encoding: 'utf8' }).status === 0) return ['kubectl', 'kustomize'];
  return null;
}

/** Render a kustomization directory. @throws Error with kustomize's message when it fails. */
export function render(cmd: string[], dir: string): K8sObject[] {
  const r = spawnSync(cmd[0], [...cmd.slice(1), dir], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  if (r.status !== 0) throw new Error(`${cmd.join(' ')} ${dir} failed: ${r.stderr || r.stdout}`);
  return parseAllDocuments(r.stdout)
    .map((d) => d.toJS() as K8sObject | null)
    .filter((o): o is K8sObject => !!o);
}

/**
 * Render overlay `base` with `components` added, in an overlay of our own in a temp dir (`resources` +
 * `components`, as docs tell an operator to write one). Returns the folder (the caller removes it) and the objects.
 */
export function renderComposed(cmd: string[], base: string, components: string[]): { dir: string; objs: K8sObject[] } {
  const dir = mkdtempSync(join(tmpdir(), 'rstar-k8s-'));
  writeFileSync(join(dir, 'kustomization.yaml'), [
    'apiVersion: kustomize.config.k8s.io/v1beta1',
    'kind: Kustomization',
    // kustomize takes only relative paths to other kustomizations.
    `resources: [${relative(dir, join(REPO_ROOT, 'infra/k8s/overlays', base))}]`,
    `components: [${components.map((c) => relative(dir, join(REPO_ROOT, 'infra/k8s/components', c))).join(', ')}]`,
    '',
  ].join('\n'));
  return { dir, objs: render(cmd, dir) };
}

/** The model class module of an apiVersion (kubernetes-models for the API, @kubernetes-models/keda for KEDA). */
function modelModule(apiVersion: string): string {
  if (apiVersion.startsWith('keda.sh/')) return `@kubernetes-models/keda/${apiVersion}`;
  return `kubernetes-models/${apiVersion}`;
}

/**
 * Validate one object against its OpenAPI schema (kubernetes-models' generated validators, offline).
 * @returns the validation error text, or null when valid. An apiVersion/kind without a model is an error.
 */
export async function schemaError(o: K8sObject): Promise<string | null> {
  let mod: Record<string, unknown>;
  try {
    mod = (await import(modelModule(o.apiVersion))) as Record<string, unknown>;
  } catch (e) {
    return `no schema for apiVersion ${o.apiVersion}: ${(e as Error).message}`;
  }
  const Model = mod[o.kind] as (new (data: unknown) => { validate(): void }) | undefined;
  if (typeof Model !== 'function') return `no schema for ${o.apiVersion} ${o.kind}`;
  try {
    new Model(o).validate();
    return null;
  } catch (e) {
    return (e as Error).message;
  }
}

/** A pod template's containers with the workload they belong to. */
export interface PlacedContainer {
  workload: string;
  kind: string;
  pod: any;
  container: any;
  /** An init container (runs to completion before the others). */
  init: boolean;
}

/** The pod templates of a workload: `spec.template` (Deployment, StatefulSet, Job...), or a LeaderWorkerSet's leader and worker templates. */
export function podTemplatesOf(o: K8sObject): { role: string; pod: any }[] {
  if (o.kind === 'Pod') return [{ role: '', pod: o.spec }];
  if (o.kind === 'LeaderWorkerSet') {
    const t = o.spec?.leaderWorkerTemplate ?? {};
    return [
      ...(t.leaderTemplate ? [{ role: 'leader', pod: t.leaderTemplate.spec }] : []),
      ...(t.workerTemplate ? [{ role: 'worker', pod: t.workerTemplate.spec }] : []),
    ];
  }
  return o.spec?.template?.spec ? [{ role: '', pod: o.spec.template.spec }] : [];
}

/** Every container (and init container) of every workload; `init` marks init containers. */
export function containersOf(objects: readonly K8sObject[]): PlacedContainer[] {
  const out: PlacedContainer[] = [];
  for (const o of objects) {
    for (const { role, pod } of podTemplatesOf(o)) {
      const workload = `${o.kind}/${o.metadata.name}${role ? `/${role}` : ''}`;
      for (const c of pod.initContainers ?? []) out.push({ workload, kind: o.kind, pod, container: c, init: true });
      for (const c of pod.containers ?? []) out.push({ workload, kind: o.kind, pod, container: c, init: false });
    }
  }
  return out;
}

/** Whether an image reference names a version: a tag other than latest, or a digest. */
export function pinnedImage(image: string): boolean {
  if (/@sha256:[0-9a-f]{64}$/.test(image)) return true;
  const tag = /:([^/:]+)$/.exec(image)?.[1];
  return !!tag && !/(^|[-_.])latest($|[-_.])/.test(tag);
}

/** GPU resources a container asks for (requests or limits), by resource name. */
export function gpuOf(c: any): Record<string, string> {
  const out: Record<string, string> = {};
  for (const part of ['requests', 'limits']) for (const [k, v] of Object.entries(c.resources?.[part] ?? {})) if ((GPU_RESOURCES as readonly string[]).includes(k)) out[k] = String(v);
  return out;
}

/**
 * Problems with a rendered overlay against rstar's rules: resources (cpu and memory, requests and limits)
 * on every container, readiness + liveness probes on every long-running one (not on init containers nor on
 * a Job's, which run to completion); every image pinned; GPUs only on the engines and the trainer, of the
 * overlay's kind (`gpu`: the one resource allowed, or null for none) and in limits; no Secret objects and
 * no credentials in plain values.
 */
export function ruleProblems(objects: readonly K8sObject[], gpu: (typeof GPU_RESOURCES)[number] | null): string[] {
  const problems: string[] = [];
  for (const { workload, kind, init, container: c } of containersOf(objects)) {
    const at = `${workload} container ${c.name}`;
    for (const part of ['requests', 'limits']) for (const r of ['cpu', 'memory']) if (!c.resources?.[part]?.[r]) problems.push(`${at}: no ${part}.${r}`);
    const runsToCompletion = init || kind === 'Job' || kind === 'CronJob';
    if (!runsToCompletion && !c.readinessProbe) problems.push(`${at}: no readinessProbe`);
    if (!runsToCompletion && !c.livenessProbe) problems.push(`${at}: no livenessProbe`);
    if (!c.image || !pinnedImage(c.image)) problems.push(`${at}: image ${c.image} is not pinned to a version`);
    const g = gpuOf(c);
    const names = Object.keys(g);
    const gpuWorkload = !init && (workload === 'StatefulSet/engine' || c.name === 'trainer');
    if (names.length && !gpuWorkload) problems.push(`${at}: asks for ${names.join(', ')} but only the engines and the trainer may`);
    for (const n of names) if (n !== gpu) problems.push(`${at}: asks for ${n}; this overlay's GPUs are ${gpu ?? 'none'}`);
    if (gpu && gpuWorkload && !c.resources?.limits?.[gpu]) problems.push(`${at}: no ${gpu} in limits`);
    for (const e of c.env ?? []) {
      if (typeof e.value === 'string' && /:\/\/[^/\s:@]+:[^/\s@]+@/.test(e.value)) problems.push(`${at}: env ${e.name} carries credentials in plain text`);
    }
  }
  for (const o of objects) {
    if (o.kind === 'Secret') problems.push(`Secret/${o.metadata.name} is in the manifests: secrets are created out of band`);
    if (o.kind === 'ConfigMap') {
      for (const [k, v] of Object.entries(o.data ?? {})) if (/:\/\/[^/\s:@]+:[^/\s@]+@/.test(v)) problems.push(`ConfigMap/${o.metadata.name} key ${k} carries credentials`);
    }
  }
  return problems;
}
