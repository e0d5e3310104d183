import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join, posix } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { RstarError, type RunConfig } from '@rstar/contracts';

/**
 * The kustomize overlays (infra/k8s/overlays/<name>) that run a GPU config (`validateOnly` with a Hugging Face
 * policy): the services, the SGLang engines and the multi-node trainer behind `trainer-worker`.
 */
export const GPU_OVERLAYS = ['mi300x', 'nvidia'] as const;

/**
 * Where a service image keeps the app and `configs/` (infra/docker/service.Dockerfile `WORKDIR /app`): the
 * optimization service resolves a config's relative paths against it (step-driver `resolveDataPath`) and
 * hands the trainer worker and the engines the resolved absolute paths.
 */
export const SERVICE_APP_ROOT = '/app';

/** A container of a rendered workload whose file system a run's paths must reach. */
type Reader = 'optimization' | 'trainer' | 'engine';

/** Which containers open each path field of a run config (docs/deploy.md "Paths and mounts"). */
export const PATH_READERS: Record<'policy.path' | 'policy.checkpoint' | 'data.path' | 'data.heldOutPath', readonly Reader[]> = {
  // The tokenizer (optimization), the base weights the trainer starts from, and version 0 on the engines.
  'policy.path': ['optimization', 'trainer', 'engine'],
  // The start weights: the trainer initialises from them, each engine loads them as version 0.
  'policy.checkpoint': ['optimization', 'trainer', 'engine'],
  // The prompts: the step driver in the optimization service reads them.
  'data.path': ['optimization'],
  'data.heldOutPath': ['optimization'],
};

/** A Kubernetes object as kustomize renders it (the fields this check reads). */
export interface RenderedObject {
  kind: string;
  metadata: { name: string };
  spec?: any;
}

/** `rstar train --validate` found a path or URL of a GPU config that the overlay's pods cannot reach. */
export class OverlayMismatchError extends RstarError {
  constructor(readonly problems: readonly { field: string; message: string }[]) {
    super('overlay_mismatch', `the config does not fit the Kubernetes overlays the services run under:\n${problems.map((p) => `  ${p.field}: ${p.message}`).join('\n')}`, problems[0]?.field ?? null);
  }
}

/** kustomize as this checkout has it: `.tools/bin/kustomize`, `kustomize` on PATH, or `kubectl kustomize`; null when none. */
export function kustomizeCommand(repoRoot: string): string[] | null {
  const local = join(repoRoot, '.tools/bin/kustomize');
  if (existsSync(local)) return [local, 'build'];
  if (spawnSync('kustomize', ['version'], { encoding: 'utf8' }).status === 0) return ['kustomize', 'build'];
  if (spawnSync('kubectl', ['kustomize', '--help'], { encoding: 'utf8' }).status === 0) return ['kubectl', 'kustomize'];
  return null;
}

/** Render a kustomization directory with `cmd` ({@link kustomizeCommand}). @throws Error with kustomize's message. */
export function renderOverlay(cmd: readonly string[], dir: string): RenderedObject[] {
  const r = spawnSync(cmd[0]!, [...cmd.slice(1), dir], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  if (r.status !== 0) throw new Error(`${cmd.join(' ')} ${dir} failed: ${r.stderr || r.stdout}`);
  return parseAllDocuments(r.stdout).map((d) => d.toJS() as RenderedObject | null).filter((o): o is RenderedObject => !!o);
}

interface Container {
  workload: string;
  mounts: string[];
}

/** The main containers of a reader, by the workloads the overlays give it (both LeaderWorkerSet roles for the trainer). */
function readerContainers(objs: readonly RenderedObject[], reader: Reader): Container[] {
  const out: Container[] = [];
  const add = (workload: string, template: { spec?: { containers?: Array<{ name: string; volumeMounts?: Array<{ mountPath: string }> }> } } | undefined) => {
    const c = template?.spec?.containers?.find((x) => x.name === reader);
    if (c) out.push({ workload, mounts: (c.volumeMounts ?? []).map((m) => m.mountPath) });
  };
  for (const o of objs) {
    if (o.kind === 'LeaderWorkerSet') {
      const t = o.spec?.leaderWorkerTemplate;
      add(`LeaderWorkerSet/${o.metadata.name} leader`, t?.leaderTemplate ?? t?.workerTemplate);
      add(`LeaderWorkerSet/${o.metadata.name} worker`, t?.workerTemplate);
    } else if (['Deployment', 'StatefulSet'].includes(o.kind)) add(`${o.kind}/${o.metadata.name}`, o.spec?.template);
  }
  return out;
}

const under = (path: string, mount: string) => path === mount || path.startsWith(mount.endsWith('/') ? mount : `${mount}/`);

/**
 * Where in the rendered overlay a URL's host leads: a Service `svc` (also `svc.<ns>`, `svc.<ns>.svc...`)
 * that exposes the port, or one pod `<set>-<i>.<svc>` of a StatefulSet whose headless Service is `svc`
 * (i below its replicas). Returns the problem, or null when it resolves.
 */
function urlProblem(objs: readonly RenderedObject[], raw: string): string | null {
  const url = new URL(raw);
  const port = Number(url.port || (url.protocol === 'https:' ? 443 : 80));
  const labels = url.hostname.split('.');
  const services = objs.filter((o) => o.kind === 'Service');
  const svcOf = (name: string) => services.find((s) => s.metadata.name === name);
  const exposes = (s: RenderedObject) => (s.spec?.ports ?? []).some((p: { port: number }) => p.port === port);
  const known = services.map((s) => s.metadata.name).join(', ');
  const direct = svcOf(labels[0]!);
  if (direct) {
    if (!exposes(direct)) return `Service ${direct.metadata.name} has no port ${port} (ports: ${(direct.spec?.ports ?? []).map((p: { port: number }) => p.port).join(', ')})`;
    return null;
  }
  const pod = /^(.+)-(\d+)$/.exec(labels[0]!);
  const headless = labels[1] ? svcOf(labels[1]) : undefined;
  if (pod && headless) {
    const set = objs.find((o) => o.kind === 'StatefulSet' && o.metadata.name === pod[1] && o.spec?.serviceName === headless.metadata.name);
    if (!set) return `no StatefulSet ${pod[1]} behind the headless Service ${headless.metadata.name}`;
    const replicas = set.spec?.replicas ?? 1;
    if (Number(pod[2]) >= replicas) return `StatefulSet ${pod[1]} has ${replicas} replicas (pods ${pod[1]}-0..${pod[1]}-${replicas - 1})`;
    if (!exposes(headless)) return `Service ${headless.metadata.name} has no port ${port}`;
    return null;
  }
  return `host ${url.hostname} is no Service of the overlay (Services: ${known}; a StatefulSet pod is <set>-<i>.<headless service>)`;
}

/**
 * What a config names that the pods of one rendered overlay cannot reach, each with its field: a path
 * (as the services see it: relative ones under {@link SERVICE_APP_ROOT}) outside every volume mount of a
 * container that reads it ({@link PATH_READERS}), naming the workload and its mounts; an `engines[].url` or
 * `trainer.url` whose host is no Service (or StatefulSet pod) of the overlay, or lacks the port.
 * Pure: takes the rendered objects ({@link renderOverlay}).
 */
export function overlayProblems(config: RunConfig, objs: readonly RenderedObject[], overlay: string): Array<{ field: string; message: string }> {
  const problems: Array<{ field: string; message: string }> = [];
  const values: Record<keyof typeof PATH_READERS, string | null | undefined> = {
    'policy.path': config.policy.path, 'policy.checkpoint': config.policy.init === 'checkpoint' ? config.policy.checkpoint : null,
    'data.path': config.data.source === 'file' ? config.data.path : null, 'data.heldOutPath': config.data.heldOutPath,
  };
  for (const [field, value] of Object.entries(values) as Array<[keyof typeof PATH_READERS, string | null | undefined]>) {
    if (!value) continue;
    const seen = posix.resolve(SERVICE_APP_ROOT, value);
    for (const reader of PATH_READERS[field]) {
      const containers = readerContainers(objs, reader);
      if (containers.length === 0) problems.push({ field, message: `overlay ${overlay} has no ${reader} container to read "${value}"` });
      for (const c of containers) {
        if (c.mounts.some((m) => under(seen, m))) continue;
        problems.push({ field, message: `"${value}" (${seen} in the pod) is on no volume of ${c.workload} in overlay ${overlay} (its mounts: ${c.mounts.join(', ') || 'none'}): mount the volume holding it there or move it under one of them` });
      }
    }
  }
  config.engines.forEach((e, i) => {
    const p = e.url ? urlProblem(objs, e.url) : null;
    if (p) problems.push({ field: `engines.${i}.url`, message: `"${e.url}" does not reach an engine in overlay ${overlay}: ${p}` });
  });
  const t = config.trainer.url ? urlProblem(objs, config.trainer.url) : null;
  if (t) problems.push({ field: 'trainer.url', message: `"${config.trainer.url}" does not reach the trainer worker in overlay ${overlay}: ${t}` });
  return problems;
}

/**
 * `rstar train --validate` of a GPU config (`validateOnly`, Hugging Face policy): renders each of
 * {@link GPU_OVERLAYS} and checks the config against it ({@link overlayProblems}).
 * @returns the overlays checked, or null when no kustomize is installed (nothing checked).
 * @throws OverlayMismatchError listing every field that does not fit.
 */
export function checkGpuOverlays(config: RunConfig, repoRoot: string, cmd = kustomizeCommand(repoRoot)): string[] | null {
  if (!cmd) return null;
  const problems = GPU_OVERLAYS.flatMap((o) => overlayProblems(config, renderOverlay(cmd, join(repoRoot, 'infra/k8s/overlays', o)), o));
  if (problems.length) throw new OverlayMismatchError(problems);
  return [...GPU_OVERLAYS];
}
