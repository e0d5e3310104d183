import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../support/service-process';
import { containersOf, gpuOf, kustomizeCommand, render, ruleProblems, schemaError, type K8sObject } from '../support/k8s.rules';

const KUSTOMIZE = kustomizeCommand();
// CI installs kustomize (infra/local/setup.sh -> install-infra-tools.sh): there its absence fails the suite.
const suite = KUSTOMIZE || process.env.CI ? describe : describe.skip;
if (!KUSTOMIZE && !process.env.CI) console.warn('k8s manifests: no kustomize (nor kubectl) — run `bash infra/local/install-infra-tools.sh`; these tests are skipped');

const OVERLAYS = [
  { name: 'local', gpu: null },
  { name: 'mi300x', gpu: 'amd.com/gpu' },
  { name: 'nvidia', gpu: 'nvidia.com/gpu' },
] as const;

const find = (objs: readonly K8sObject[], kind: string, name: string) => {
  const o = objs.find((x) => x.kind === kind && x.metadata.name === name);
  if (!o) throw new Error(`${kind}/${name} is not in the rendered overlay`);
  return o;
};
const container = (o: K8sObject, name: string) => {
  const c = o.spec.template.spec.containers.find((x: { name: string }) => x.name === name);
  if (!c) throw new Error(`${o.kind}/${o.metadata.name} has no container ${name}`);
  return c;
};
const envOf = (c: any, name: string) => c.env?.find((e: { name: string }) => e.name === name);

suite('Kubernetes manifests', () => {
  const rendered = new Map<string, K8sObject[]>();
  beforeAll(() => {
    expect(KUSTOMIZE, 'kustomize is not installed: run `bash infra/local/install-infra-tools.sh`').not.toBeNull();
    for (const o of OVERLAYS) rendered.set(o.name, render(KUSTOMIZE!, join(REPO_ROOT, 'infra/k8s/overlays', o.name)));
  });

  for (const overlay of OVERLAYS) {
    describe(`overlay ${overlay.name}`, () => {
      const objs = () => rendered.get(overlay.name)!;

      it('every object validates against the Kubernetes OpenAPI schema (and KEDA\'s CRD), in namespace rstar', async () => {
        expect(objs().length).toBeGreaterThan(20);
        const errors: string[] = [];
        for (const o of objs()) {
          const err = await schemaError(o);
          if (err) errors.push(`${o.kind}/${o.metadata.name}: ${err}`);
          if (o.kind !== 'Namespace' && o.metadata.namespace !== 'rstar') errors.push(`${o.kind}/${o.metadata.name}: namespace ${o.metadata.namespace}`);
        }
        expect(errors).toEqual([]);
      });

      it(`resources and probes on every container, pinned images, GPUs (${overlay.gpu ?? 'none'}) only on the engines and the trainer, no secrets`, () => {
        expect(ruleProblems(objs(), overlay.gpu)).toEqual([]);
        const gpuContainers = containersOf(objs()).filter((p) => Object.keys(gpuOf(p.container)).length);
        if (overlay.gpu) expect(gpuContainers.map((p) => `${p.workload}/${p.container.name}`).sort()).toEqual(['Deployment/optimization/trainer', 'StatefulSet/engine/engine']);
        else expect(gpuContainers).toEqual([]);
        // The rstar services run as a non-root user.
        for (const p of containersOf(objs()).filter((x) => String(x.container.image).startsWith('rstar/'))) {
          const nonRoot = p.container.securityContext?.runAsNonRoot ?? p.pod.securityContext?.runAsNonRoot;
          expect(nonRoot, `${p.workload}/${p.container.name} runs as non-root`).toBe(true);
        }
      });

      it('NATS: a 3-node JetStream cluster with file storage, a PDB keeping two, and the stream at 3 replicas', () => {
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
        // The stream's bound fits each node's volume and JetStream's file store (every node holds a full copy).
        const maxBytes = Number(env.RSTAR_STREAM_MAX_BYTES);
        const gib = (q: string) => Number(/^(\d+)Gi$/.exec(q)![1]) * 1024 ** 3;
        expect(maxBytes).toBeGreaterThan(0);
        expect(maxBytes).toBeLessThan(gib(nats.spec.volumeClaimTemplates[0].spec.resources.requests.storage));
        expect(maxBytes).toBeLessThan(Number(/max_file_store: (\d+)GB/.exec(conf)![1]) * 1e9);
        expect(env.RSTAR_NATS_URL.split(',')).toEqual([0, 1, 2].map((i) => `nats://nats-${i}.nats:4222`));
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
        // Ready when the engine's health route answers.
        expect(container(engine, 'engine').readinessProbe.httpGet.path).toBe('/health');
      });

      it('checkpoints: one volume at the same path in the trainer and every engine', () => {
        const opt = find(objs(), 'Deployment', 'optimization');
        const engine = find(objs(), 'StatefulSet', 'engine');
        const claimOf = (o: K8sObject, c: any) => {
          const m = c.volumeMounts.find((v: { mountPath: string }) => v.mountPath === '/checkpoints');
          return o.spec.template.spec.volumes.find((v: { name: string }) => v.name === m?.name)?.persistentVolumeClaim?.claimName;
        };
        expect(claimOf(opt, container(opt, 'trainer'))).toBe('rstar-checkpoints');
        expect(claimOf(opt, container(opt, 'optimization'))).toBe('rstar-checkpoints');
        expect(claimOf(engine, container(engine, 'engine'))).toBe('rstar-checkpoints');
        const pvc = find(objs(), 'PersistentVolumeClaim', 'rstar-checkpoints');
        expect(pvc.spec.accessModes).toEqual([overlay.gpu ? 'ReadWriteMany' : 'ReadWriteOnce']);
        expect(find(objs(), 'ConfigMap', 'rstar-env').data!.RSTAR_CHECKPOINT_DIR).toBe('/checkpoints/runs');
        // On the GPU pools policy-serving tokenizes with the base model's tokenizer, read from the same volume.
        const ps = find(objs(), 'StatefulSet', 'policy-serving');
        const psc = container(ps, 'policy-serving');
        if (overlay.gpu) {
          expect(envOf(psc, 'RSTAR_TOKENIZER_DIR')?.value).toBe('/checkpoints/models/base');
          expect(claimOf(ps, psc)).toBe('rstar-checkpoints');
          expect(psc.volumeMounts.find((v: { mountPath: string }) => v.mountPath === '/checkpoints').readOnly).toBe(true);
        } else expect(envOf(psc, 'RSTAR_TOKENIZER_DIR')).toBeUndefined();
      });

      it('Postgres through the Secret rstar-postgres (key uri) in every service that reads the archive', () => {
        for (const [kind, name] of [['Deployment', 'control-plane'], ['Deployment', 'resampling'], ['Deployment', 'optimization']] as const) {
          const v = envOf(container(find(objs(), kind, name), name), 'RSTAR_DATABASE_URL');
          expect(v?.valueFrom?.secretKeyRef, `${name}'s RSTAR_DATABASE_URL`).toEqual({ name: 'rstar-postgres', key: 'uri' });
        }
      });

      if (overlay.gpu) {
        it(`engines: SGLang on the ${overlay.name === 'mi300x' ? 'ROCm' : 'CUDA'} image on the GPU pool, shared memory, tool-execution scaled by KEDA on its backlog`, () => {
          const engine = find(objs(), 'StatefulSet', 'engine');
          const c = container(engine, 'engine');
          if (overlay.name === 'mi300x') {
            expect(c.image).toMatch(/^lmsysorg\/sglang:v[\d.]+-rocm\d+-mi30x$/);
            expect(engine.spec.template.spec.nodeSelector).toEqual({ 'feature.node.kubernetes.io/amd-gpu': 'true' });
          } else {
            expect(c.image).toMatch(/^lmsysorg\/sglang:v[\d.]+/);
            expect(c.image).not.toMatch(/rocm/);
            expect(engine.spec.template.spec.nodeSelector).toEqual({ 'nvidia.com/gpu.present': 'true' });
          }
          expect(c.command).toEqual(['python3', '-m', 'sglang.launch_server']);
          expect(engine.spec.template.spec.tolerations.map((t: { key: string }) => t.key)).toEqual([overlay.gpu]);
          const shm = c.volumeMounts.find((v: { mountPath: string }) => v.mountPath === '/dev/shm');
          expect(engine.spec.template.spec.volumes.find((v: { name: string }) => v.name === shm.name).emptyDir.medium).toBe('Memory');
          const opt = find(objs(), 'Deployment', 'optimization');
          expect(opt.spec.template.spec.tolerations.map((t: { key: string }) => t.key)).toEqual([overlay.gpu]);
          const trainer = container(opt, 'trainer');
          expect(trainer.image).toBe(`rstar/trainer:0.1.0-${overlay.name === 'mi300x' ? 'rocm' : 'cuda'}`);
          expect(trainer.command.slice(0, 3)).toEqual(['torchrun', '--nproc-per-node', String(trainer.resources.limits[overlay.gpu])]);
          const so = find(objs(), 'ScaledObject', 'tool-execution');
          expect(so.spec.scaleTargetRef.name).toBe('tool-execution');
          expect(so.spec.triggers[0]).toMatchObject({ type: 'nats-jetstream', metadata: { stream: 'RSTAR', consumer: 'tool-execution' } });
        });
      }
    });
  }

  it('the security component on an overlay: default-deny NetworkPolicies, NATS users from a Secret, every service requires tokens', async () => {
    // An overlay of our own that adds the component to mi300x, as docs/security.md tells an operator to.
    const dir = mkdtempSync(join(tmpdir(), 'rstar-k8s-secured-'));
    try {
      writeFileSync(join(dir, 'kustomization.yaml'), [
        'apiVersion: kustomize.config.k8s.io/v1beta1',
        'kind: Kustomization',
        // kustomize takes only relative paths to other kustomizations.
        `resources: [${relative(dir, join(REPO_ROOT, 'infra/k8s/overlays/mi300x'))}]`,
        `components: [${relative(dir, join(REPO_ROOT, 'infra/k8s/components/security'))}]`,
        '',
      ].join('\n'));
      const objs = render(KUSTOMIZE!, dir);
      const errors: string[] = [];
      for (const o of objs) {
        const err = await schemaError(o);
        if (err) errors.push(`${o.kind}/${o.metadata.name}: ${err}`);
      }
      expect(errors).toEqual([]);
      expect(ruleProblems(objs, 'amd.com/gpu')).toEqual([]);
      const policies = objs.filter((o) => o.kind === 'NetworkPolicy');
      const denyAll = policies.find((p) => Object.keys(p.spec.podSelector ?? {}).length === 0 && (p.spec.ingress ?? []).length === 0);
      expect(denyAll, 'a default-deny NetworkPolicy selecting every pod').toBeDefined();
      expect(policies.length).toBeGreaterThan(3);
      const nats = find(objs, 'StatefulSet', 'nats');
      const sources = nats.spec.template.spec.volumes.find((v: { name: string }) => v.name === 'config').projected.sources;
      expect(sources).toContainEqual({ secret: { name: 'rstar-nats-auth' } });
      for (const [kind, name] of [['Deployment', 'control-plane'], ['Deployment', 'tool-execution'], ['Deployment', 'reward-grading'], ['Deployment', 'resampling'], ['StatefulSet', 'policy-serving'], ['Deployment', 'optimization']] as const) {
        const c = container(find(objs, kind, name), name);
        expect(envOf(c, 'RSTAR_REQUIRE_AUTH')?.value, `${name} requires tokens`).toBe('true');
        expect(envOf(c, 'RSTAR_SECRETS_DIR')?.value).toBe('/var/run/secrets/rstar');
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
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

  it('the schema check refuses a malformed object and an unknown kind', async () => {
    expect(await schemaError({ apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'x' }, spec: { replicas: 'two' } })).toMatch(/replicas/);
    expect(await schemaError({ apiVersion: 'postgresql.cnpg.io/v1', kind: 'Cluster', metadata: { name: 'x' } })).toMatch(/no schema/);
  });
});
