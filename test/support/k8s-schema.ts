import Ajv2020, { type ErrorObject, type ValidateFunction } from 'ajv/dist/2020';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { parse } from 'yaml';
import type { K8sObject } from './k8s.rules';
import { REPO_ROOT } from './service-process';

/** The strict JSON schemas of one Kubernetes version (kubernetes-validate's `v<X.Y.Z>-local-strict`). */
const K8S_DEFS_ID = 'https://kubernetes.io/api/_definitions.json';
const CRD_DIR = join(REPO_ROOT, 'test/infra/crds');
/**
 * The published CRDs infra/local/install-infra-tools.sh fetches from the operators' Go modules: .tools/crds, or
 * RSTAR_CRDS_DIR when set (the script writes where that variable points, so a checkout can keep its own).
 */
export const PUBLISHED_CRD_DIR = process.env.RSTAR_CRDS_DIR || join(REPO_ROOT, '.tools/crds');
/** How sources in PUBLISHED_CRD_DIR are named in messages: the repository-relative path when it is the default. */
const PUBLISHED_LABEL = process.env.RSTAR_CRDS_DIR || '.tools/crds';
/** The custom resources whose published CRD the test must use (an excerpt of them is not accepted). */
export const PUBLISHED_CRD_KINDS = [
  'keda.sh/v1alpha1 ScaledObject',
  'monitoring.coreos.com/v1 ServiceMonitor',
  'monitoring.coreos.com/v1 PodMonitor',
  'barmancloud.cnpg.io/v1 ObjectStore',
  'postgresql.cnpg.io/v1 Cluster',
  'postgresql.cnpg.io/v1 ScheduledBackup',
  'leaderworkerset.x-k8s.io/v1 LeaderWorkerSet',
];

/**
 * The folder of kubernetes-validate's schemas in .venv-dev (infra/python/requirements-dev.txt), or null when
 * the package is not installed.
 */
export function kubernetesSchemaRoot(): string | null {
  const lib = join(REPO_ROOT, '.venv-dev/lib');
  if (!existsSync(lib)) return null;
  for (const py of readdirSync(lib)) {
    const dir = join(lib, py, 'site-packages/kubernetes_validate/kubernetes-json-schema');
    if (existsSync(dir)) return dir;
  }
  return null;
}

/** One CRD schema: group, version, kind, its openAPIV3Schema, where it came from and whether it is published. */
interface CrdSchema {
  group: string;
  version: string;
  kind: string;
  schema: Record<string, unknown>;
  source: string;
  published: boolean;
}

/** One excerpt of test/infra/crds: a CRD schema as written there. */
type Excerpt = Omit<CrdSchema, 'source' | 'published'>;

/** A published `CustomResourceDefinition` (apiextensions.k8s.io/v1), as much of it as the test reads. */
interface PublishedCrd {
  kind: string;
  spec: { group: string; names: { kind: string }; versions: { name: string; served: boolean; schema?: { openAPIV3Schema: Record<string, unknown> } }[] };
}

/** The CRD folders {@link vendoredCrds} reads: excerpts (test/infra/crds) and published CRDs, with its label. */
export interface CrdDirs {
  excerpts: string;
  published: string;
  /** How messages name the published folder. */
  publishedLabel: string;
}
const DEFAULT_DIRS: CrdDirs = { excerpts: CRD_DIR, published: PUBLISHED_CRD_DIR, publishedLabel: PUBLISHED_LABEL };
/** The default folders' CRDs, read once per process (the LeaderWorkerSet CRD alone is 1.2 MB of YAML). */
let defaultCrds: ReadonlyMap<string, CrdSchema> | null = null;

/**
 * Every CRD schema the manifest test knows, by `group/version Kind`: the published CRDs in
 * {@link PUBLISHED_CRD_DIR} (every served version) and the excerpts in test/infra/crds (README there) for the
 * operators no registry here serves.
 * @param dirs where to read them; the default folders unless a test names others.
 * @throws Error naming the fix when a kind of {@link PUBLISHED_CRD_KINDS} has no published CRD, or has an
 *   excerpt in the excerpt folder.
 */
export function vendoredCrds(dirs: CrdDirs = DEFAULT_DIRS): ReadonlyMap<string, CrdSchema> {
  if (dirs === DEFAULT_DIRS && defaultCrds) return defaultCrds;
  const out = new Map<string, CrdSchema>();
  for (const f of readdirSync(dirs.excerpts).filter((n) => n.endsWith('.yaml'))) {
    const doc = parse(readFileSync(join(dirs.excerpts, f), 'utf8'), { merge: true }) as Excerpt | Excerpt[];
    for (const c of Array.isArray(doc) ? doc : [doc]) {
      const key = `${c.group}/${c.version} ${c.kind}`;
      // A kind with a published CRD is checked against that CRD alone: an excerpt of it here would be a second,
      // unchecked copy that drifts from the release.
      if (PUBLISHED_CRD_KINDS.includes(key)) throw new Error(`excerpt ${f} is of ${key}, whose published CRD the test uses: delete it`);
      out.set(key, { ...c, source: relative(REPO_ROOT, join(dirs.excerpts, f)), published: false });
    }
  }
  const published = existsSync(dirs.published) ? readdirSync(dirs.published).filter((n) => n.endsWith('.yaml')) : [];
  for (const f of published) {
    const crd = parse(readFileSync(join(dirs.published, f), 'utf8')) as PublishedCrd;
    if (crd.kind !== 'CustomResourceDefinition') throw new Error(`${dirs.publishedLabel}/${f} is not a CustomResourceDefinition`);
    for (const v of crd.spec.versions) {
      if (!v.served || !v.schema) continue;
      const key = `${crd.spec.group}/${v.name} ${crd.spec.names.kind}`;
      out.set(key, { group: crd.spec.group, version: v.name, kind: crd.spec.names.kind, schema: v.schema.openAPIV3Schema, source: `${dirs.publishedLabel}/${f}`, published: true });
    }
  }
  const missing = PUBLISHED_CRD_KINDS.filter((k) => !out.get(k)?.published);
  if (missing.length)
    throw new Error(`no published CRD for ${missing.join(', ')} in ${dirs.publishedLabel}: run \`bash infra/local/install-infra-tools.sh\` (it fetches them from the operators' Go modules; RSTAR_CRDS_DIR, when set, must be the same for the script and the test)`);
  if (dirs === DEFAULT_DIRS) defaultCrds = out;
  return out;
}

/**
 * Where the schema of `apiVersion` + `kind` came from (a file of {@link PUBLISHED_CRD_DIR} or of
 * test/infra/crds) and whether it is a published CRD, or null when no CRD serves that kind.
 */
export function crdSource(apiVersion: string, kind: string): { source: string; published: boolean } | null {
  const c = vendoredCrds().get(`${apiVersion} ${kind}`);
  return c ? { source: c.source, published: c.published } : null;
}

/**
 * An OpenAPI v3 schema of a CRD as a strict JSON Schema (draft 2020-12), the way a kube-apiserver reads it
 * with strict field validation: an object with `properties` and no `additionalProperties` refuses other
 * fields unless `x-kubernetes-preserve-unknown-fields` is set; `nullable` admits null; `$ref: k8s#<name>`
 * points into the Kubernetes definitions of the version under test.
 */
export function strictCrdSchema(s: unknown): unknown {
  if (Array.isArray(s)) return s.map(strictCrdSchema);
  if (!s || typeof s !== 'object') return s;
  const o = s as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(o)) {
    if (k === '$ref' && typeof v === 'string' && v.startsWith('k8s#')) out.$ref = `${K8S_DEFS_ID}#/$defs/${v.slice(4)}`;
    else if (k === 'properties' && v && typeof v === 'object') out.properties = Object.fromEntries(Object.entries(v).map(([p, ps]) => [p, strictCrdSchema(ps)]));
    else if (k.startsWith('x-kubernetes-') || k === 'nullable' || k === 'format') continue;
    else out[k] = strictCrdSchema(v);
  }
  if (o.properties && o.additionalProperties === undefined && o['x-kubernetes-preserve-unknown-fields'] !== true) out.additionalProperties = false;
  if (o.nullable === true && typeof o.type === 'string') out.type = [o.type, 'null'];
  return out;
}

/** A validator of rendered objects against one Kubernetes version's strict schemas and the vendored CRDs. */
export class StrictValidator {
  private readonly ajv: Ajv2020;
  private readonly gvk = new Map<string, string>();
  private readonly crds = vendoredCrds();
  private readonly compiled = new Map<string, ValidateFunction>();

  /**
   * @param version a Kubernetes version kubernetes-validate carries, e.g. `1.30.0`.
   * @throws Error when kubernetes-validate (or that version) is not installed.
   */
  constructor(readonly version: string) {
    const root = kubernetesSchemaRoot();
    if (!root) throw new Error('kubernetes-validate is not installed in .venv-dev: run `bash infra/local/setup.sh` (infra/python/requirements-dev.txt)');
    const file = join(root, `v${version}-local-strict/_definitions.json`);
    if (!existsSync(file)) throw new Error(`kubernetes-validate has no schemas for Kubernetes ${version} (${file})`);
    const defs = JSON.parse(readFileSync(file, 'utf8')) as { $defs: Record<string, { 'x-kubernetes-group-version-kind'?: { group: string; version: string; kind: string }[] }> };
    for (const [name, d] of Object.entries(defs.$defs)) {
      for (const g of d['x-kubernetes-group-version-kind'] ?? []) this.gvk.set(`${g.group ? `${g.group}/` : ''}${g.version} ${g.kind}`, name);
    }
    // strict: false — the schemas carry x-kubernetes-* annotations ajv does not know; formats are not checked.
    this.ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: false });
    this.ajv.addSchema(defs, K8S_DEFS_ID);
  }

  /** Whether this version knows `apiVersion` + `kind` (built in, or a vendored CRD). */
  knows(apiVersion: string, kind: string): boolean {
    return this.gvk.has(`${apiVersion} ${kind}`) || this.crds.has(`${apiVersion} ${kind}`);
  }

  /**
   * Validate one object strictly. @returns the problems (`<path>: <message>`), empty when valid; an unknown
   * apiVersion/kind is a problem.
   */
  problems(o: K8sObject): string[] {
    const key = `${o.apiVersion} ${o.kind}`;
    let validate = this.compiled.get(key);
    if (!validate) {
      const def = this.gvk.get(key);
      const crd = this.crds.get(key);
      if (def) validate = this.ajv.compile({ $ref: `${K8S_DEFS_ID}#/$defs/${def}` });
      else if (crd) {
        const schema = strictCrdSchema(crd.schema) as Record<string, unknown>;
        // The API server validates a custom resource's metadata as ObjectMeta (published CRDs say only `object`).
        schema.properties ??= {};
        (schema.properties as Record<string, unknown>).metadata = { $ref: `${K8S_DEFS_ID}#/$defs/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta` };
        validate = this.ajv.compile(schema);
      } else return [`no schema for ${key} in Kubernetes ${this.version} nor in test/infra/crds or ${PUBLISHED_LABEL}`];
      this.compiled.set(key, validate);
    }
    if (validate(o)) return [];
    return dedupe((validate.errors ?? []).map(describe));
  }
}

/** One ajv error as `<path>: <what is wrong>`, naming an unknown field. */
function describe(e: ErrorObject): string {
  const at = e.instancePath || '/';
  if (e.keyword === 'additionalProperties') return `${at}: unknown field "${(e.params as { additionalProperty: string }).additionalProperty}"`;
  if (e.keyword === 'enum') return `${at}: ${e.message} (${(e.params as { allowedValues: unknown[] }).allowedValues.join(', ')})`;
  return `${at}: ${e.message}`;
}

/** ajv reports a failed oneOf/anyOf branch by branch: keep each message once. */
function dedupe(xs: string[]): string[] {
  return [...new Set(xs)];
}
