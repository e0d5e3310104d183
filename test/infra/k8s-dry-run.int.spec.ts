import { readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../support/service-process';
import { kustomizeCommand, render, renderComposed, type K8sObject } from '../support/k8s.rules';
import { PUBLISHED_CRD_DIR, vendoredCrds } from '../support/k8s-schema';
import { KubeApiserver, kubeApiserverMissing } from '../support/kube-apiserver';

/*
 * Every overlay, with and without the security component and the opt-in Kafka export, applied with
 * server-side dry-run to a real kube-apiserver (built from k8s.io/kubernetes by
 * infra/local/install-kube-apiserver.sh, over Debian's etcd). This catches what schema validation alone cannot:
 * a Deployment selector that does not match its template, duplicate ports, invalid names and label values,
 * immutable or mutually exclusive fields, and objects of a kind no installed CRD serves.
 */
const KUSTOMIZE = kustomizeCommand();
const missing = kubeApiserverMissing() ?? (KUSTOMIZE ? null : 'kustomize is not installed: run bash infra/local/install-infra-tools.sh');
// CI installs both (infra/local/setup.sh): there their absence fails the suite.
const suite = !missing || process.env.CI ? describe : describe.skip;
if (missing && !process.env.CI) console.warn(`k8s dry-run: ${missing}; skipped`);

const VARIANTS: { name: string; base: string; components: string[] }[] = [
  { name: 'local', base: 'local', components: [] },
  { name: 'mi300x', base: 'mi300x', components: [] },
  { name: 'nvidia', base: 'nvidia', components: [] },
  { name: 'local+security', base: 'local', components: ['security'] },
  { name: 'mi300x+security', base: 'mi300x', components: ['security'] },
  { name: 'nvidia+security+kafka-export', base: 'nvidia', components: ['security', 'kafka-export'] },
];

/** Render `base` with `components` added, as docs tell an operator to compose them. */
function renderVariant(base: string, components: string[]): K8sObject[] {
  if (!components.length) return render(KUSTOMIZE!, join(REPO_ROOT, 'infra/k8s/overlays', base));
  const { dir, objs } = renderComposed(KUSTOMIZE!, base, components);
  rmSync(dir, { recursive: true, force: true });
  return objs;
}

/**
 * A structural schema for the API server from one of test/infra/crds' excerpts: an embedded Kubernetes type
 * (`$ref: k8s#...`) becomes an object whose fields the server keeps (the strict test checks those fields
 * against the real type), descriptions aside the rest is the excerpt as written.
 */
function structural(s: unknown): unknown {
  if (Array.isArray(s)) return s.map(structural);
  if (!s || typeof s !== 'object') return s;
  const o = s as Record<string, unknown>;
  if (typeof o.$ref === 'string') return { type: 'object', 'x-kubernetes-preserve-unknown-fields': true };
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(o)) out[k] = k === 'properties' && v && typeof v === 'object' ? Object.fromEntries(Object.entries(v).map(([p, ps]) => [p, structural(ps)])) : structural(v);
  // A structural schema gives every field a type; an integer-or-string (IntOrString) says so instead, as the
  // published CRDs write it.
  const branches = (o.anyOf ?? o.oneOf) as { type?: string }[] | undefined;
  if (o.type === undefined && branches?.every((b) => b.type === 'integer' || b.type === 'string')) out['x-kubernetes-int-or-string'] = true;
  return out;
}

/**
 * The CRDs the manifests need: the published ones as released (KEDA, Prometheus Operator, Barman Cloud,
 * CloudNativePG, LeaderWorkerSet: PUBLISHED_CRD_KINDS), the remaining excerpts (Strimzi) wrapped as CRDs.
 */
function crdObjects(): K8sObject[] {
  const dir = PUBLISHED_CRD_DIR;
  const published = readdirSync(dir).filter((f) => f.endsWith('.yaml')).map((f) => parse(readFileSync(join(dir, f), 'utf8')) as K8sObject);
  const have = new Set(published.map((c) => `${c.spec.group} ${c.spec.names.kind}`));
  const byKind = new Map<string, { group: string; kind: string; versions: { name: string; schema: unknown }[] }>();
  for (const c of vendoredCrds().values()) {
    if (have.has(`${c.group} ${c.kind}`)) continue;
    const e = byKind.get(`${c.group} ${c.kind}`) ?? { group: c.group, kind: c.kind, versions: [] };
    e.versions.push({ name: c.version, schema: c.schema });
    byKind.set(`${c.group} ${c.kind}`, e);
  }
  const excerpts = [...byKind.values()].map(({ group, kind, versions }) => {
    const plural = `${kind.toLowerCase()}s`;
    const schema = (s: unknown) => {
      const root = structural(s) as Record<string, any>;
      root.properties = { ...root.properties, metadata: { type: 'object' } };
      return root;
    };
    return {
      apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition', metadata: { name: `${plural}.${group}` },
      spec: {
        group, scope: 'Namespaced', names: { kind, plural, singular: kind.toLowerCase(), listKind: `${kind}List` },
        versions: versions.map((v, i) => ({ name: v.name, served: true, storage: i === 0, schema: { openAPIV3Schema: schema(v.schema) } })),
      },
    } as K8sObject;
  });
  return [...published, ...excerpts];
}

const describeProblem = (o: K8sObject, r: { status: number; body: any }) => `${o.kind}/${o.metadata.name}${o.metadata.namespace ? ` in ${o.metadata.namespace}` : ''}: HTTP ${r.status} ${r.body?.message ?? JSON.stringify(r.body).slice(0, 300)}`;

suite('Kubernetes manifests against a real kube-apiserver (server-side dry-run)', () => {
  const api = new KubeApiserver();

  beforeAll(async () => {
    if (missing) throw new Error(missing);
    await api.start();
    const crds = crdObjects();
    for (const c of crds) {
      const r = await api.apply(c, { dryRun: false });
      if (r.status >= 300) throw new Error(`installing the CRD ${c.metadata.name} failed: ${describeProblem(c, r)}`);
    }
    await api.waitEstablished(crds.map((c) => c.metadata.name));
  }, 300_000);
  afterAll(async () => {
    await api.stop();
  });

  for (const v of VARIANTS) {
    it(`${v.name}: the API server accepts every object (strict field validation, dry-run)`, async () => {
      const objs = renderVariant(v.base, v.components);
      // The namespaces are created for real: a dry-run of an object in a namespace that does not exist fails.
      const namespaces = new Set(objs.map((o) => o.metadata.namespace).filter((n): n is string => !!n));
      for (const n of namespaces) await api.apply({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: n } }, { dryRun: false });
      const problems: string[] = [];
      for (const o of objs) {
        const r = await api.apply(o, { dryRun: true });
        if (r.status >= 300) problems.push(describeProblem(o, r));
      }
      expect(problems).toEqual([]);
      expect(objs.length).toBeGreaterThan(20);
    }, 180_000);
  }

  it('refuses what a schema alone lets through: a selector that does not match, a misspelt field, an uninstalled kind, a published CRD\'s CEL rule', async () => {
    const pod = { metadata: { labels: { app: 'a' } }, spec: { containers: [{ name: 'a', image: 'a:1' }] } };
    await api.apply({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'rstar-dry-run-neg' } }, { dryRun: false });
    const cases: [K8sObject, RegExp][] = [
      [{ apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'x', namespace: 'rstar-dry-run-neg' }, spec: { selector: { matchLabels: { app: 'b' } }, template: pod } }, /`selector` does not match template `labels`/],
      [{ apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'x', namespace: 'rstar-dry-run-neg' }, spec: { selector: { matchLabels: { app: 'a' } }, template: pod, replicaz: 2 } }, /\.spec\.replicaz: field not declared in schema/],
      [{ apiVersion: 'v1', kind: 'Service', metadata: { name: 'Bad_Name', namespace: 'rstar-dry-run-neg' }, spec: { ports: [{ port: 80 }] } }, /Invalid value: "Bad_Name"/],
      [{ apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name: 'x' } }, /does not serve example.com\/v1 Widget/],
      // The published CRDs' own rules: a CEL rule of CloudNativePG's Cluster, an undeclared field of LeaderWorkerSet.
      [{ apiVersion: 'postgresql.cnpg.io/v1', kind: 'Cluster', metadata: { name: 'x', namespace: 'rstar-dry-run-neg' }, spec: { instances: 1, storage: { size: '1Gi' }, imageName: 'ghcr.io/cloudnative-pg/postgresql:16.10', imageCatalogRef: { apiGroup: 'postgresql.cnpg.io', kind: 'ImageCatalog', name: 'c', major: 16 } } }, /imageName and imageCatalogRef are mutually exclusive/],
      [{ apiVersion: 'leaderworkerset.x-k8s.io/v1', kind: 'LeaderWorkerSet', metadata: { name: 'x', namespace: 'rstar-dry-run-neg' }, spec: { leaderWorkerTemplate: { sise: 2, workerTemplate: pod } } }, /\.spec\.leaderWorkerTemplate\.sise: field not declared in schema/],
    ];
    for (const [o, want] of cases) {
      const r = await api.apply(o, { dryRun: true });
      expect(r.status, describeProblem(o, r)).toBeGreaterThanOrEqual(400);
      expect(describeProblem(o, r)).toMatch(want);
    }
  }, 120_000);
});
