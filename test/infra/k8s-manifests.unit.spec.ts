import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ARCHIVE_LOGINS } from '@rstar/event-store';
import { parseRunConfig } from '@rstar/contracts';
import { loadRunConfig, overlayProblems } from '@rstar/step-driver';
import { REPO_ROOT } from '../support/service-process';
import { containersOf, gpuOf, kustomizeCommand, podTemplatesOf, render, renderComposed, ruleProblems, schemaError, type K8sObject } from '../support/k8s.rules';
import { crdSource, kubernetesSchemaRoot, PUBLISHED_CRD_DIR, PUBLISHED_CRD_KINDS, StrictValidator, vendoredCrds } from '../support/k8s-schema';

const KUSTOMIZE = kustomizeCommand();
// CI installs kustomize and kubernetes-validate (infra/local/setup.sh): there their absence fails the suite.
const ready = !!KUSTOMIZE && !!kubernetesSchemaRoot();
const suite = ready || process.env.CI ? describe : describe.skip;
if (!ready && !process.env.CI) console.warn('k8s manifests: no kustomize (nor kubectl) or no kubernetes-validate in .venv-dev — run `bash infra/local/setup.sh`; these tests are skipped');

/** The Kubernetes versions every overlay must validate against (the oldest we support, and a current one). */
const K8S_VERSIONS = ['1.30.0', '1.33.0'];
const OVERLAYS = [
  { name: 'local', gpu: null },
  { name: 'mi300x', gpu: 'amd.com/gpu' },
  { name: 'nvidia', gpu: 'nvidia.com/gpu' },
] as const;
const SERVICES = ['control-plane', 'policy-serving', 'tool-execution', 'reward-grading', 'resampling', 'optimization'];
const DB_SERVICES = ['control-plane', 'optimization', 'resampling'] as const;

const find = (objs: readonly K8sObject[], kind: string, name: string) => {
  const o = objs.find((x) => x.kind === kind && x.metadata.name === name);
  if (!o) throw new Error(`${kind}/${name} is not in the rendered overlay`);
  return o;
};
const container = (o: K8sObject, name: string, role = '') => {
  const pod = podTemplatesOf(o).find((t) => t.role === role)?.pod;
  const c = pod?.containers.find((x: { name: string }) => x.name === name);
  if (!c) throw new Error(`${o.kind}/${o.metadata.name} has no container ${name}`);
  return c;
};
const envOf = (c: any, name: string) => c.env?.find((e: { name: string }) => e.name === name);
const matches = (selector: Record<string, string>, labels: Record<string, string> = {}) => Object.entries(selector).every(([k, v]) => labels[k] === v);

/** An overlay of our own in a temp dir: `resources` + `components`, as docs tell an operator to write. */
function composed(base: string, components: string[]): { dir: string; objs: K8sObject[] } {
  return renderComposed(KUSTOMIZE!, base, components);
}

/**
 * The overlay with the security component added to its own `components:` (as docs/security.md tells an
 * operator to): a copy beside it, so that its relative paths still resolve.
 */
function securedInPlace(overlay: string): { dir: string; objs: K8sObject[] } {
  const dir = mkdtempSync(join(REPO_ROOT, 'infra/k8s/overlays', `.secured-${overlay}-`));
  cpSync(join(REPO_ROOT, 'infra/k8s/overlays', overlay), dir, { recursive: true });
  const file = join(dir, 'kustomization.yaml');
  writeFileSync(file, readFileSync(file, 'utf8').replace(/^components:\n((?: {2}- .*\n)*)/m, (m) => `${m}  - ../../components/security\n`));
  return { dir, objs: render(KUSTOMIZE!, dir) };
}

suite('Kubernetes manifests', () => {
  const rendered = new Map<string, K8sObject[]>();
  const validators: StrictValidator[] = [];
  const temps: string[] = [];
  beforeAll(() => {
    expect(KUSTOMIZE, 'kustomize is not installed: run `bash infra/local/install-infra-tools.sh`').not.toBeNull();
    for (const v of K8S_VERSIONS) validators.push(new StrictValidator(v));
    for (const o of OVERLAYS) {
      rendered.set(o.name, render(KUSTOMIZE!, join(REPO_ROOT, 'infra/k8s/overlays', o.name)));
      const secured = composed(o.name, ['security']);
      temps.push(secured.dir);
      rendered.set(`${o.name}+security`, secured.objs);
      if (o.gpu) {
        const inPlace = securedInPlace(o.name);
        temps.push(inPlace.dir);
        rendered.set(`${o.name}+security-in-place`, inPlace.objs);
      }
    }
  });
  afterAll(() => {
    for (const d of temps) rmSync(d, { recursive: true, force: true });
  });

  const strictProblems = (objs: readonly K8sObject[]) =>
    validators.flatMap((v) => objs.flatMap((o) => v.problems(o).map((p) => `k8s ${v.version} ${o.kind}/${o.metadata.name} ${p}`)));

  for (const overlay of OVERLAYS) {
    for (const secured of [false, true]) {
      const key = `${overlay.name}${secured ? '+security' : ''}`;
      describe(`overlay ${key}`, () => {
        const objs = () => rendered.get(key)!;

        it(`every object validates strictly against Kubernetes ${K8S_VERSIONS.join(' and ')} and the CRDs (unknown fields fail), in namespace rstar`, async () => {
          expect(objs().length).toBeGreaterThan(20);
          const errors = strictProblems(objs());
          for (const o of objs()) {
            if (o.kind !== 'Namespace' && o.metadata.namespace !== 'rstar') errors.push(`${o.kind}/${o.metadata.name}: namespace ${o.metadata.namespace}`);
            // KEDA's types also against @kubernetes-models/keda, generated from its full CRD.
            if (o.apiVersion.startsWith('keda.sh/')) {
              const err = await schemaError(o);
              if (err) errors.push(`${o.kind}/${o.metadata.name}: ${err}`);
            }
          }
          expect(errors).toEqual([]);
        });

        it('fail closed: only the laptop overlay without the security component serves an open API (RSTAR_ALLOW_INSECURE)', () => {
          const env = objs().find((o) => o.kind === 'ConfigMap' && o.metadata.name === 'rstar-env') as unknown as { data: Record<string, string> };
          expect(env.data.HOST).toBe('0.0.0.0');
          expect(env.data.RSTAR_ALLOW_INSECURE ?? 'false').toBe(overlay.name === 'local' && !secured ? 'true' : 'false');
        });

        it(`resources and probes on every container, pinned images, GPUs (${overlay.gpu ?? 'none'}) only on the engines and the trainer, no secrets`, () => {
          expect(ruleProblems(objs(), overlay.gpu)).toEqual([]);
          const gpuContainers = containersOf(objs()).filter((p) => Object.keys(gpuOf(p.container)).length);
          if (overlay.gpu) {
            expect(gpuContainers.map((p) => `${p.workload}/${p.container.name}`).sort()).toEqual(['LeaderWorkerSet/trainer/leader/trainer', 'LeaderWorkerSet/trainer/worker/trainer', 'StatefulSet/engine/engine']);
          } else expect(gpuContainers).toEqual([]);
          // The rstar services run as a non-root user.
          for (const p of containersOf(objs()).filter((x) => String(x.container.image).startsWith('rstar/'))) {
            const nonRoot = p.container.securityContext?.runAsNonRoot ?? p.pod.securityContext?.runAsNonRoot;
            expect(nonRoot, `${p.workload}/${p.container.name} runs as non-root`).toBe(true);
          }
        });
      });
    }
  }

  for (const overlay of OVERLAYS) {
    describe(`overlay ${overlay.name}`, () => {
      const objs = () => rendered.get(overlay.name)!;

      it('NATS: a 3-node JetStream cluster with file storage, a PDB keeping two, the stream at 3 replicas, an exporter', () => {
        const nats = find(objs(), 'StatefulSet', 'nats');
        expect(nats.spec.replicas).toBe(3);
        expect(nats.spec.volumeClaimTemplates[0].metadata.name).toBe('data');
        const conf = find(objs(), 'ConfigMap', 'nats-config').data!['nats.conf'];
        expect(conf).toMatch(/jetstream\s*{[^}]*store_dir: \/data/);
        for (const i of [0, 1, 2]) expect(conf).toContain(`nats-route://nats-${i}.nats:6222`);
        expect(find(objs(), 'Service', 'nats').spec.clusterIP).toBe('None');
        expect(find(objs(), 'PodDisruptionBudget', 'nats').spec.minAvailable).toBe(2);
        const env = find(objs(), 'ConfigMap', 'rstar-env').data!;
        expect(env.RSTAR_STREAM_REPLICAS).toBe('3');
        const maxBytes = Number(env.RSTAR_STREAM_MAX_BYTES);
        const gib = (q: string) => Number(/^(\d+)Gi$/.exec(q)![1]) * 1024 ** 3;
        expect(maxBytes).toBeGreaterThan(0);
        expect(maxBytes).toBeLessThan(gib(nats.spec.volumeClaimTemplates[0].spec.resources.requests.storage));
        expect(maxBytes).toBeLessThan(Number(/max_file_store: (\d+)GB/.exec(conf)![1]) * 1e9);
        expect(env.RSTAR_NATS_URL.split(',')).toEqual([0, 1, 2].map((i) => `nats://nats-${i}.nats:4222`));
        const exporter = container(nats, 'exporter');
        expect(exporter.args.at(-1)).toBe('http://127.0.0.1:8222');
        expect(exporter.ports[0]).toEqual({ name: 'metrics', containerPort: 7777 });
      });

      it('policy-serving: a StatefulSet whose RSTAR_INSTANCE_ID is the pod name; engines found by the headless Service', () => {
        const ps = find(objs(), 'StatefulSet', 'policy-serving');
        const c = container(ps, 'policy-serving');
        expect(envOf(c, 'RSTAR_INSTANCE_ID').valueFrom.fieldRef.fieldPath).toBe('metadata.name');
        const engine = find(objs(), 'StatefulSet', 'engine');
        expect(engine.spec.serviceName).toBe('engine');
        expect(find(objs(), 'Service', 'engine').spec.clusterIP).toBe('None');
        const expected = Array.from({ length: engine.spec.replicas }, (_, i) => `sglang=http://engine-${i}.engine:30000`).join(',');
        expect(envOf(c, 'RSTAR_ENGINES').value).toBe(expected);
        expect(envOf(container(find(objs(), 'Deployment', 'optimization'), 'optimization'), 'RSTAR_ENGINES').value).toBe(expected);
        expect(container(engine, 'engine').readinessProbe.httpGet.path).toBe('/health');
      });

      it('checkpoints: one volume (with a storage class on the GPU pools) at the same path in the trainer and every engine; /models and /shared where the presets name them', () => {
        const claimOf = (pod: any, c: any, path: string) => {
          const m = c.volumeMounts.find((v: { mountPath: string }) => v.mountPath === path);
          return m && pod.volumes.find((v: { name: string }) => v.name === m.name)?.persistentVolumeClaim?.claimName;
        };
        const trainerPods = containersOf(objs()).filter((p) => p.container.name === 'trainer');
        expect(trainerPods.length).toBe(overlay.gpu ? 2 : 1);
        const engine = containersOf(objs()).find((p) => p.workload === 'StatefulSet/engine' && !p.init)!;
        for (const p of [...trainerPods, engine]) {
          expect(claimOf(p.pod, p.container, '/checkpoints'), `${p.workload} /checkpoints`).toBe('rstar-checkpoints');
          expect(claimOf(p.pod, p.container, '/models'), `${p.workload} /models`).toBe('rstar-checkpoints');
        }
        for (const p of trainerPods) expect(claimOf(p.pod, p.container, '/shared'), `${p.workload} /shared`).toBe('rstar-checkpoints');
        // Every absolute path a preset names is under a mount of the trainer.
        for (const preset of ['qwen-7b-mi300x', 'rstar2-14b']) {
          const text = readFileSync(join(REPO_ROOT, 'configs', `${preset}.yaml`), 'utf8');
          for (const path of text.match(/(?<=[\s:"])\/(models|shared)\/[^\s"]+/g) ?? []) {
            for (const p of trainerPods) expect(p.container.volumeMounts.some((m: { mountPath: string }) => path.startsWith(`${m.mountPath}/`)), `${preset}: ${path} mounted in ${p.workload}`).toBe(true);
          }
        }
        const pvc = find(objs(), 'PersistentVolumeClaim', 'rstar-checkpoints');
        expect(pvc.spec.accessModes).toEqual([overlay.gpu ? 'ReadWriteMany' : 'ReadWriteOnce']);
        if (overlay.gpu) expect(pvc.spec.storageClassName).toBe('rstar-rwx');
        expect(find(objs(), 'ConfigMap', 'rstar-env').data!.RSTAR_CHECKPOINT_DIR).toBe('/checkpoints/runs');
      });

      it('trainer-worker: the Service the presets name selects exactly the pods whose trainer (rank 0) listens on 0.0.0.0:31000', () => {
        const svc = find(objs(), 'Service', 'trainer-worker');
        expect(svc.spec.ports[0]).toMatchObject({ port: 31000, targetPort: 31000 });
        const templates = objs().flatMap((o) => podTemplatesOf(o).map((t) => ({ o, role: t.role, pod: t.pod, labels: (o.kind === 'LeaderWorkerSet' ? o.spec.leaderWorkerTemplate[`${t.role}Template`] : o.spec.template)?.metadata?.labels ?? {} })));
        const selected = templates.filter((t) => matches(svc.spec.selector, t.labels));
        expect(selected.map((t) => `${t.o.kind}/${t.o.metadata.name}`)).toEqual([overlay.gpu ? 'LeaderWorkerSet/trainer' : 'Deployment/optimization']);
        const trainer = selected[0].pod.containers.find((c: { name: string }) => c.name === 'trainer');
        const host = trainer.args[trainer.args.indexOf('--host') + 1];
        expect(host, 'the trainer listens where the Service and Prometheus reach it').toBe('0.0.0.0');
        expect(trainer.args[trainer.args.indexOf('--port') + 1]).toBe('31000');
      });

      if (overlay.gpu) {
        it('every GPU preset fits the pods: each path on a volume of every container that reads it, each engine URL an engine pod, trainer.url the trainer-worker Service (what rstar train --validate checks)', () => {
          for (const preset of ['qwen-7b-mi300x', 'rstar2-14b']) {
            const { config } = loadRunConfig({ preset });
            expect(config.validateOnly && config.policy.kind === 'hf', `${preset} is a GPU config`).toBe(true);
            expect(overlayProblems(config, objs(), overlay.name), preset).toEqual([]);
            // Every URL and host the preset names exists: the engines it samples on and the trainer it trains on.
            for (const e of config.engines) expect(e.url, `${preset} names its engines`).toMatch(/^http:\/\/engine-\d\.engine:30000$/);
          }
          const { config } = loadRunConfig({ preset: 'qwen-7b-mi300x' });
          expect(new URL(config.trainer.url!).hostname).toBe('trainer-worker');
          find(objs(), 'Service', 'trainer-worker');
        });

        it('a config naming a path no reader mounts, an engine pod past the replicas or an unknown host is refused naming the field, the workload and its mounts', () => {
          const { config } = loadRunConfig({ preset: 'qwen-7b-mi300x' });
          const bad = parseRunConfig({ ...config, policy: { ...config.policy, model: undefined, checkpoint: '/data/sft' }, data: { ...config.data, path: 'datasets/train.jsonl' },
            engines: [{ kind: 'sglang', url: 'http://engine-7.engine:30000' }, { kind: 'sglang', url: 'http://sglang-0:30000' }], trainer: { ...config.trainer, url: 'http://trainer-worker:8080' } });
          const problems = overlayProblems(bad, objs(), overlay.name);
          const about = (field: string) => problems.filter((p) => p.field === field).map((p) => p.message);
          expect(about('policy.checkpoint')).toHaveLength(4);
          expect(about('policy.checkpoint').join('\n')).toContain('"/data/sft" (/data/sft in the pod) is on no volume of StatefulSet/engine');
          expect(about('policy.checkpoint').join('\n')).toContain('LeaderWorkerSet/trainer worker');
          expect(about('data.path')).toEqual([expect.stringMatching(/\(\/app\/datasets\/train\.jsonl in the pod\) is on no volume of Deployment\/optimization .*its mounts: .*\/shared/)]);
          expect(about('engines.0.url')).toEqual([expect.stringContaining('StatefulSet engine has 4 replicas')]);
          expect(about('engines.1.url')).toEqual([expect.stringContaining('host sglang-0 is no Service of the overlay')]);
          expect(about('trainer.url')).toEqual([expect.stringContaining('Service trainer-worker has no port 8080')]);
          // Without the engines' /shared mount the presets' SFT checkpoint would not load as version 0.
          const noShared = objs().map((o) => (o.kind === 'StatefulSet' && o.metadata.name === 'engine' ? structuredClone(o) : o));
          const engine = noShared.find((o) => o.kind === 'StatefulSet' && o.metadata.name === 'engine')!;
          const c = engine.spec.template.spec.containers.find((x: { name: string }) => x.name === 'engine');
          c.volumeMounts = c.volumeMounts.filter((m: { mountPath: string }) => m.mountPath !== '/shared');
          expect(overlayProblems(config, noShared, overlay.name)).toEqual([{ field: 'policy.checkpoint', message: expect.stringContaining('on no volume of StatefulSet/engine') }]);
        });
      }

      it('Postgres: a Secret per database service, no service migrates, the migration Job runs as the owner (the superuser on a laptop)', () => {
        for (const name of DB_SERVICES) {
          const c = container(find(objs(), 'Deployment', name), name);
          expect(envOf(c, 'RSTAR_DATABASE_URL')?.valueFrom?.secretKeyRef, `${name}'s RSTAR_DATABASE_URL`).toEqual({ name: `rstar-db-${name}`, key: 'uri' });
          expect(envOf(c, 'RSTAR_DB_MIGRATE')?.value, `${name} does not migrate`).toBe('false');
        }
        const job = find(objs(), 'Job', 'rstar-db-setup');
        const migrate = job.spec.template.spec.initContainers.find((c: { name: string }) => c.name === 'migrate');
        // The laptop's single Postgres has only its superuser until `rstar db roles` runs.
        expect(envOf(migrate, 'RSTAR_DATABASE_URL').valueFrom.secretKeyRef).toEqual({ name: overlay.gpu ? 'rstar-db-owner' : 'rstar-db-superuser', key: 'uri' });
        expect(migrate.args[0]).toContain('EventStore.connect');
        expect(envOf(container(job, 'roles'), 'RSTAR_DATABASE_URL').valueFrom.secretKeyRef).toEqual({ name: 'rstar-db-superuser', key: 'uri' });
      });

      it('telemetry: every rstar container exports to the in-cluster OpenTelemetry Collector', () => {
        const tel = find(objs(), 'ConfigMap', 'rstar-telemetry').data!;
        expect(tel.OTEL_EXPORTER_OTLP_ENDPOINT).toBe('http://otel-collector:4318');
        const svc = find(objs(), 'Service', 'otel-collector');
        expect(svc.spec.ports.map((p: { port: number }) => p.port)).toContain(4318);
        const conf = parse(find(objs(), 'ConfigMap', 'otel-collector').data!['config.yaml']);
        expect(conf.service.pipelines.traces.receivers).toEqual(['otlp']);
        expect(conf.receivers.otlp.protocols.http.endpoint).toBe('0.0.0.0:4318');
        for (const p of containersOf(objs()).filter((x) => String(x.container.image).startsWith('rstar/') && !x.init && x.kind !== 'Job')) {
          expect(p.container.envFrom?.some((e: any) => e.configMapRef?.name === 'rstar-telemetry'), `${p.workload}/${p.container.name} reads rstar-telemetry`).toBe(true);
        }
      });

      if (overlay.gpu) {
        it('the trainer: a multi-node LeaderWorkerSet with torchrun --nnodes and a c10d rendezvous on the leader, behind trainer-worker as the presets name it', () => {
          const lws = find(objs(), 'LeaderWorkerSet', 'trainer');
          const size = lws.spec.leaderWorkerTemplate.size;
          expect(size).toBeGreaterThan(1);
          for (const role of ['leader', 'worker']) {
            const c = container(lws, 'trainer', role);
            const cmd: string[] = c.command;
            const flag = (f: string) => cmd[cmd.indexOf(f) + 1];
            expect(cmd[0]).toBe('torchrun');
            expect(flag('--nnodes')).toBe('$(LWS_GROUP_SIZE)');
            expect(flag('--nproc-per-node')).toBe(String(c.resources.limits[overlay.gpu]));
            expect(flag('--rdzv-backend')).toBe('c10d');
            expect(flag('--rdzv-endpoint')).toBe('$(LWS_LEADER_ADDRESS):29400');
            expect(cmd.slice(-3)).toEqual(['-m', 'rstar_trainer', 'serve']);
            expect(c.args.slice(c.args.indexOf('--host'), c.args.indexOf('--host') + 4)).toEqual(['--host', '0.0.0.0', '--port', '31000']);
            expect(c.envFrom).toContainEqual({ configMapRef: { name: 'rstar-nccl', optional: true } });
          }
          // RDMA is off by default.
          expect(find(objs(), 'ConfigMap', 'rstar-nccl').data!.NCCL_IB_DISABLE).toBe('1');
          // The optimization pod keeps only the step driver, which reaches rank 0 where the presets say.
          const opt = find(objs(), 'Deployment', 'optimization');
          expect(opt.spec.template.spec.containers.map((c: { name: string }) => c.name)).toEqual(['optimization']);
          const preset = parse(readFileSync(join(REPO_ROOT, 'configs/qwen-7b-mi300x.yaml'), 'utf8'));
          expect(envOf(container(opt, 'optimization'), 'RSTAR_TRAINER_URL').value).toBe(preset.trainer.url);
          const url = new URL(preset.trainer.url);
          const svc = find(objs(), 'Service', url.hostname);
          expect(svc.spec.ports[0].port).toBe(Number(url.port));
          const leaderLabels = lws.spec.leaderWorkerTemplate.leaderTemplate.metadata.labels;
          expect(matches(svc.spec.selector, leaderLabels), 'trainer-worker selects the leader (rank 0)').toBe(true);
          expect(matches(svc.spec.selector, lws.spec.leaderWorkerTemplate.workerTemplate.metadata.labels), 'and never a worker').toBe(false);
          const headless = find(objs(), 'Service', 'trainer');
          expect(headless.spec.clusterIP).toBe('None');
          expect(headless.spec.selector).toEqual({ 'leaderworkerset.sigs.k8s.io/name': 'trainer' });
        });

        it('engines: the same SGLang release on both vendors, on the GPU pool, shared memory; tool-execution scaled by KEDA on its backlog', () => {
          const engine = find(objs(), 'StatefulSet', 'engine');
          const c = container(engine, 'engine');
          const release = (image: string) => /:v(\d+\.\d+\.\d+)/.exec(image)![1];
          const other = find(rendered.get(overlay.name === 'mi300x' ? 'nvidia' : 'mi300x')!, 'StatefulSet', 'engine');
          expect(release(c.image)).toBe(release(container(other, 'engine').image));
          if (overlay.name === 'mi300x') {
            expect(c.image).toMatch(/^lmsysorg\/sglang-rocm:v[\d.]+-rocm\d+-mi30x-\d{8}$/);
            expect(engine.spec.template.spec.nodeSelector).toEqual({ 'feature.node.kubernetes.io/amd-gpu': 'true' });
          } else {
            expect(c.image).toMatch(/^lmsysorg\/sglang:v[\d.]+-cu\d+$/);
            expect(engine.spec.template.spec.nodeSelector).toEqual({ 'nvidia.com/gpu.present': 'true' });
          }
          expect(c.command).toEqual(['python3', '-m', 'sglang.launch_server']);
          expect(c.args).toContain('--enable-metrics');
          expect(engine.spec.template.spec.tolerations.map((t: { key: string }) => t.key)).toEqual([overlay.gpu]);
          const shm = c.volumeMounts.find((v: { mountPath: string }) => v.mountPath === '/dev/shm');
          expect(engine.spec.template.spec.volumes.find((v: { name: string }) => v.name === shm.name).emptyDir.medium).toBe('Memory');
          const so = find(objs(), 'ScaledObject', 'tool-execution');
          expect(so.spec.scaleTargetRef.name).toBe('tool-execution');
          expect(so.spec.triggers[0]).toMatchObject({ type: 'nats-jetstream', metadata: { stream: 'RSTAR', consumer: 'tool-execution' } });
        });

        it('CloudNativePG: 3 instances, WAL archived by the Barman Cloud plugin, nightly backups, a PodMonitor, one managed role and Secret per service', () => {
          const cluster = find(objs(), 'Cluster', 'rstar-pg');
          expect(cluster.spec.instances).toBe(3);
          expect(cluster.spec.affinity).toMatchObject({ enablePodAntiAffinity: true, podAntiAffinityType: 'required' });
          const archiver = cluster.spec.plugins.find((p: { isWALArchiver?: boolean }) => p.isWALArchiver);
          expect(archiver.name).toBe('barman-cloud.cloudnative-pg.io');
          const store = find(objs(), 'ObjectStore', archiver.parameters.barmanObjectName);
          expect(store.spec.configuration.destinationPath).toMatch(/^s3:\/\//);
          expect(store.spec.retentionPolicy).toMatch(/^\d+[dwm]$/);
          const backup = objs().find((o) => o.kind === 'ScheduledBackup')!;
          expect(backup.spec).toMatchObject({ cluster: { name: 'rstar-pg' }, method: 'plugin', pluginConfiguration: { name: archiver.name } });
          expect(backup.spec.schedule.split(' ')).toHaveLength(6);
          const pm = find(objs(), 'PodMonitor', 'rstar-pg');
          expect(pm.spec.selector.matchLabels).toEqual({ 'cnpg.io/cluster': 'rstar-pg' });
          // The logins of `rstar db roles`: the owner bootstraps the database, the others are managed roles
          // whose password Secret is the one their service reads its URL from.
          expect(cluster.spec.bootstrap.initdb).toEqual({ database: 'rstar', owner: 'rstar_owner', secret: { name: 'rstar-db-owner' } });
          const logins = cluster.spec.managed.roles.filter((r: { login: boolean }) => r.login);
          expect(logins.map((r: { name: string }) => r.name).sort()).toEqual(ARCHIVE_LOGINS.filter((l) => l !== 'owner').map((l) => `rstar_${l}`).sort());
          for (const r of logins) expect(r.passwordSecret.name).toBe(`rstar-db-${r.name.slice('rstar_'.length).replace(/_/g, '-')}`);
          // The clients verify the server against the cluster's CA (CloudNativePG's Secret <cluster>-ca).
          for (const [kind, name] of [['Deployment', 'control-plane'], ['Deployment', 'resampling'], ['Deployment', 'optimization'], ['Job', 'rstar-db-setup']] as const) {
            const o = find(objs(), kind, name);
            const vol = o.spec.template.spec.volumes.find((v: any) => v.secret?.secretName === 'rstar-pg-ca');
            expect(vol, `${name} mounts rstar-pg-ca`).toBeDefined();
            for (const c of [...(o.spec.template.spec.initContainers ?? []), ...o.spec.template.spec.containers].filter((x: any) => envOf(x, 'RSTAR_DATABASE_URL'))) {
              expect(c.volumeMounts.find((m: any) => m.name === vol.name)?.mountPath, `${name}/${c.name}`).toBe('/var/run/secrets/postgres-ca');
            }
          }
          const groups = new Set(cluster.spec.managed.roles.filter((r: { login: boolean }) => !r.login).map((r: { name: string }) => r.name));
          for (const r of logins) for (const g of r.inRoles) expect(groups.has(g), `${r.name} is in ${g}`).toBe(true);
        });

        it('monitoring: every service, NATS, the engines, the trainer and the collector are scraped; the dashboard is a ConfigMap for the Grafana sidecar', () => {
          const sm = find(objs(), 'ServiceMonitor', 'rstar-services');
          const selected = objs().filter((o) => o.kind === 'Service' && sm.spec.selector.matchExpressions[0].values.includes(o.metadata.labels?.['app.kubernetes.io/name']));
          expect(selected.map((s) => s.metadata.name).sort()).toEqual([...SERVICES].sort());
          for (const s of selected) expect(s.spec.ports.map((p: { name: string }) => p.name)).toContain(sm.spec.endpoints[0].port);
          // Each PodMonitor selects pods that have the port it scrapes.
          const templates = objs().flatMap((o) => podTemplatesOf(o).map((t) => ({ o, labels: (o.kind === 'LeaderWorkerSet' ? o.spec.leaderWorkerTemplate[`${t.role}Template`] : o.spec.template)?.metadata?.labels ?? {}, pod: t.pod })));
          for (const name of ['nats', 'engine', 'trainer', 'otel-collector']) {
            const pm = find(objs(), 'PodMonitor', name);
            const pods = templates.filter((t) => matches(pm.spec.selector.matchLabels, t.labels));
            expect(pods.length, `PodMonitor ${name} selects a pod`).toBeGreaterThan(0);
            const port = pm.spec.podMetricsEndpoints[0].port;
            for (const t of pods) expect(t.pod.containers.some((c: any) => c.ports?.some((p: { name: string }) => p.name === port)), `${t.o.kind}/${t.o.metadata.name} has port ${port}`).toBe(true);
          }
          const dash = find(objs(), 'ConfigMap', 'rstar-grafana-dashboard');
          expect(dash.metadata.labels?.grafana_dashboard).toBe('1');
          expect(JSON.parse(dash.data!['rstar-dashboard.json']).panels.length).toBeGreaterThan(0);
        });
      }
    });
  }

  for (const [overlay, how] of OVERLAYS.filter((o) => o.gpu).flatMap((o) => [[o, 'security'], [o, 'security-in-place']] as const)) {
    it(`the security component on ${overlay.name} (${how === 'security' ? 'in a kustomization of its own' : "in the overlay's own components"}): in namespace rstar, default deny both ways, DNS-less sandbox pods in user namespaces, SGLang's --api-key from a Secret, tokens required`, () => {
      const objs = rendered.get(`${overlay.name}+${how}`)!;
      expect(strictProblems(objs)).toEqual([]);
      const policies = objs.filter((o) => o.kind === 'NetworkPolicy');
      for (const p of policies) expect(p.metadata.namespace, `NetworkPolicy/${p.metadata.name}`).toBe('rstar');
      const denyAll = policies.find((p) => Object.keys(p.spec.podSelector ?? {}).length === 0 && !p.spec.ingress && !p.spec.egress);
      expect(denyAll?.spec.policyTypes.sort()).toEqual(['Egress', 'Ingress']);
      // A pod's egress: the union of the rules of the policies that select it for Egress.
      const selects = (p: K8sObject, labels: Record<string, string>) => {
        const s = p.spec.podSelector ?? {};
        return matches(s.matchLabels ?? {}, labels) && (s.matchExpressions ?? []).every((e: { key: string; operator: string; values: string[] }) => (e.operator === 'In' ? e.values.includes(labels[e.key]) : !e.values.includes(labels[e.key])));
      };
      const egressOf = (labels: Record<string, string>) => policies.filter((p) => p.spec.policyTypes.includes('Egress') && selects(p, labels)).flatMap((p) => p.spec.egress ?? []);
      for (const sandbox of ['tool-execution', 'reward-grading']) {
        const rules = egressOf({ 'app.kubernetes.io/name': sandbox });
        expect(rules.length, `${sandbox} has egress rules`).toBeGreaterThan(0);
        for (const r of rules) {
          expect(r.to?.length, `${sandbox}: every egress rule names its peers`).toBeGreaterThan(0);
          for (const to of r.to) expect(to.namespaceSelector ?? to.ipBlock, `${sandbox}: no peer outside the namespace (DNS, Internet)`).toBeUndefined();
          expect(r.ports.map((p: { port: number }) => p.port)).not.toContain(53);
        }
        const d = find(objs, 'Deployment', sandbox);
        expect(d.spec.template.spec.hostUsers, `${sandbox} in a user namespace`).toBe(false);
        const c = container(d, sandbox);
        expect(envOf(c, 'RSTAR_NATS_URL').value).toBe('nats://$(NATS_CLIENT_SERVICE_HOST):$(NATS_CLIENT_SERVICE_PORT)');
      }
      // Every other rstar workload has egress rules too (default deny covers the rest).
      for (const name of ['control-plane', 'policy-serving', 'optimization', 'trainer', 'nats']) expect(egressOf({ 'app.kubernetes.io/name': name }).length, `${name} egress`).toBeGreaterThan(0);
      // The step driver reaches the trainer's control API; the model Job reaches the Hub.
      const ingressTo = (labels: Record<string, string>) => policies.filter((p) => p.spec.policyTypes.includes('Ingress') && selects(p, labels)).flatMap((p) => p.spec.ingress ?? []);
      expect(ingressTo({ 'app.kubernetes.io/name': 'trainer', 'rstar.io/trainer-rank0': 'true' }).some((r: any) => r.from?.some((f: any) => f.podSelector?.matchLabels?.['app.kubernetes.io/name'] === 'optimization') && r.ports?.some((p: any) => p.port === 31000))).toBe(true);
      expect(egressOf({ 'app.kubernetes.io/name': 'rstar-model-download' }).some((r: any) => r.ports?.some((p: any) => p.port === 443))).toBe(true);
      const engine = container(find(objs, 'StatefulSet', 'engine'), 'engine');
      expect(engine.args.slice(-2)).toEqual(['--api-key', '$(RSTAR_ENGINE_API_KEY)']);
      expect(envOf(engine, 'RSTAR_ENGINE_API_KEY').valueFrom.secretKeyRef).toEqual({ name: 'rstar-engine-api-key', key: 'api-key' });
      // One database Secret per service: no two services share one.
      const dbSecrets = DB_SERVICES.map((n) => envOf(container(find(objs, 'Deployment', n), n), 'RSTAR_DATABASE_URL').valueFrom.secretKeyRef.name);
      expect(new Set(dbSecrets).size).toBe(DB_SERVICES.length);
      const nats = find(objs, 'StatefulSet', 'nats');
      const sources = nats.spec.template.spec.volumes.find((v: { name: string }) => v.name === 'config').projected.sources;
      expect(sources).toContainEqual({ secret: { name: 'rstar-nats-auth' } });
      for (const [kind, name] of [['Deployment', 'control-plane'], ['Deployment', 'tool-execution'], ['Deployment', 'reward-grading'], ['Deployment', 'resampling'], ['StatefulSet', 'policy-serving'], ['Deployment', 'optimization']] as const) {
        const c = container(find(objs, kind, name), name);
        expect(envOf(c, 'RSTAR_REQUIRE_AUTH')?.value, `${name} requires tokens`).toBe('true');
        expect(envOf(c, 'RSTAR_SECRETS_DIR')?.value).toBe('/var/run/secrets/rstar');
      }
    });
  }

  it('the Kafka export component renders and validates on an overlay (Strimzi KafkaTopic, brokers from a ConfigMap)', () => {
    const { dir, objs } = composed('nvidia', ['kafka-export']);
    temps.push(dir);
    expect(strictProblems(objs)).toEqual([]);
    const topic = find(objs, 'KafkaTopic', 'rstar-events');
    const cm = find(objs, 'ConfigMap', 'rstar-kafka').data!;
    expect(topic.spec.topicName).toBe(cm.RSTAR_KAFKA_TOPIC);
    expect(container(find(objs, 'Deployment', 'control-plane'), 'control-plane').envFrom).toContainEqual({ configMapRef: { name: 'rstar-kafka' } });
  });

  it('strict validation fails on a misspelt field, a wrong type and an unknown field of a CRD, naming it', () => {
    const pod = { containers: [{ name: 'a', image: 'a:1' }] };
    const cases: [K8sObject, RegExp][] = [
      [{ apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'x' }, spec: { selector: {}, template: { spec: { ...pod, securityContext: { runAsNonRot: true } } } } }, /securityContext: unknown field "runAsNonRot"/],
      [{ apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'x' }, spec: { replicas: 'two', selector: {}, template: { spec: pod } } }, /\/spec\/replicas: must be integer/],
      [{ apiVersion: 'keda.sh/v1alpha1', kind: 'ScaledObject', metadata: { name: 'x' }, spec: { scaleTargetRef: { name: 'a' }, triggers: [], pollingIntervall: 10 } }, /unknown field "pollingIntervall"/],
      [{ apiVersion: 'postgresql.cnpg.io/v1', kind: 'Cluster', metadata: { name: 'x' }, spec: { instances: 3, storage: { sise: '1Gi' } } }, /\/spec\/storage: unknown field "sise"/],
      [{ apiVersion: 'postgresql.cnpg.io/v1', kind: 'ScheduledBackup', metadata: { name: 'x' }, spec: { schedule: '0 0 2 * * *', cluster: { name: 'x' }, target: 'standby' } }, /\/spec\/target: must be equal to one of the allowed values \(primary, prefer-standby\)/],
      [{ apiVersion: 'leaderworkerset.x-k8s.io/v1', kind: 'LeaderWorkerSet', metadata: { name: 'x' }, spec: { leaderWorkerTemplate: { workerTemplate: { spec: { containers: [{ name: 'a', imagee: 'a:1' }] } } } } }, /containers\/0: unknown field "imagee"/],
      [{ apiVersion: 'monitoring.coreos.com/v1', kind: 'PodMonitor', metadata: { name: 'x', labelz: {} } as K8sObject['metadata'], spec: {} }, /\/metadata: unknown field "labelz"/],
      [{ apiVersion: 'monitoring.coreos.com/v1', kind: 'ServiceMonitor', metadata: { name: 'x' }, spec: { selector: {}, endpoints: [{ port: 'metrics', intervall: '15s' }] } }, /endpoints\/0: unknown field "intervall"/],
      [{ apiVersion: 'barmancloud.cnpg.io/v1', kind: 'ObjectStore', metadata: { name: 'x' }, spec: { configuration: { destinationPath: 's3://b/', s3Credentials: { accessKeyId: { name: 's', key: 'k' }, secretAccesKey: { name: 's', key: 'k' } } } } }, /s3Credentials: unknown field "secretAccesKey"/],
      [{ apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name: 'x' } }, /no schema for example.com\/v1 Widget/],
    ];
    for (const [o, want] of cases) for (const v of validators) expect(v.problems(o).join('\n'), `${o.kind} on ${v.version}`).toMatch(want);
  });

  it('validates KEDA, Prometheus Operator, Barman Cloud, CloudNativePG and LeaderWorkerSet resources against their published CRDs, not excerpts', () => {
    for (const k of PUBLISHED_CRD_KINDS) {
      const [apiVersion, kind] = k.split(' ') as [string, string];
      const from = crdSource(apiVersion, kind);
      expect(from?.published, `${k} from ${from?.source}`).toBe(true);
      expect(from?.source, k).toMatch(/\/[a-z0-9.-]+_[a-z]+\.yaml$/);
    }
    // Strimzi's KafkaTopic is still an excerpt: the Go module proxy refuses its module.
    expect(crdSource('kafka.strimzi.io/v1beta2', 'KafkaTopic')).toEqual({ source: 'test/infra/crds/strimzi-kafkatopic.yaml', published: false });
    // An excerpt of one of those kinds is refused, and so is a published folder that lacks one of them.
    const excerpts = mkdtempSync(join(tmpdir(), 'rstar-crd-excerpts-'));
    temps.push(excerpts);
    writeFileSync(join(excerpts, 'lws.yaml'), 'group: leaderworkerset.x-k8s.io\nversion: v1\nkind: LeaderWorkerSet\nschema: { type: object }\n');
    expect(() => vendoredCrds({ excerpts, published: PUBLISHED_CRD_DIR, publishedLabel: 'published' })).toThrow(/excerpt lws\.yaml is of leaderworkerset\.x-k8s\.io\/v1 LeaderWorkerSet, whose published CRD the test uses/);
    const empty = mkdtempSync(join(tmpdir(), 'rstar-crd-published-'));
    temps.push(empty);
    expect(() => vendoredCrds({ excerpts: join(REPO_ROOT, 'test/infra/crds'), published: empty, publishedLabel: 'empty' })).toThrow(/no published CRD for .*postgresql\.cnpg\.io\/v1 Cluster.* in empty: run `bash infra\/local\/install-infra-tools\.sh`/);
    // Every rendered object of those kinds (every overlay and component) passed the published schema above; at
    // least one of each kind is rendered, so the published CRDs are really exercised.
    const all = [...rendered.values()].flat();
    for (const k of PUBLISHED_CRD_KINDS) expect(all.some((o) => `${o.apiVersion} ${o.kind}` === k), `a rendered ${k}`).toBe(true);
  });

  it('the rules catch a container without probes or resources, an unpinned image, a GPU on a service, a Secret', () => {
    const bad: K8sObject[] = [
      {
        apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'policy-serving' },
        spec: { template: { spec: { containers: [{ name: 'policy-serving', image: 'rstar/policy-serving:latest', resources: { limits: { 'amd.com/gpu': 8 } } }] } } },
      },
      { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'pg' } },
      { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'env' }, data: { RSTAR_DATABASE_URL: 'postgres://rstar:hunter2@pg:5432/rstar' } },
    ];
    const problems = ruleProblems(bad, 'nvidia.com/gpu');
    for (const want of ['no requests.cpu', 'no readinessProbe', 'no livenessProbe', 'is not pinned', 'only the engines and the trainer may', "this overlay's GPUs are nvidia.com/gpu", 'Secret/pg', 'carries credentials']) {
      expect(problems.some((p) => p.includes(want)), `a problem mentioning "${want}" in ${JSON.stringify(problems)}`).toBe(true);
    }
  });
});
