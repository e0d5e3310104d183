import Ajv2020, { type ErrorObject, type ValidateFunction } from 'ajv/dist/2020';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import type { K8sObject } from './k8s.rules';
import { REPO_ROOT } from './service-process';

/** The strict JSON schemas of one Kubernetes version (kubernetes-validate's `v<X.Y.Z>-local-strict`). */
const K8S_DEFS_ID = 'https://kubernetes.io/api/_definitions.json';
const CRD_DIR = join(REPO_ROOT, 'test/infra/crds');
/** Published CRDs fetched by infra/local/install-infra-tools.sh (from the operators' Go modules). */
const PUBLISHED_CRD_DIR = join(REPO_ROOT, '.tools/crds');
/** The custom resources whose published CRD the test must use (an excerpt of them is not accepted). */
export const PUBLISHED_CRD_KINDS = ['keda.sh/v1alpha1 ScaledObject', 'monitoring.coreos.com/v1 ServiceMonitor', 'monitoring.coreos.com/v1 PodMonitor', 'barmancloud.cnpg.io/v1 ObjectStore'];

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

/** One CRD schema: group, version, kind, its openAPIV3Schema and where it came from. */
interface CrdSchema {
  group: string;
  version: string;
  kind: string;
  schema: Record<string, unknown>;
  source: string;
}

/** A published `CustomResourceDefinition` (apiextensions.k8s.io/v1), as much of it as the test reads. */
interface PublishedCrd {
  kind: string;
  spec: { group: string; names: { kind: string }; versions: { name: string; served: boolean; schema?: { openAPIV3Schema: Record<string, unknown> } }[] };
}

/**
 * Every CRD schema the manifest test knows, by `group/version Kind`: the published CRDs in .tools/crds
 * (every served version) and the excerpts in test/infra/crds (README there) for the operators no registry
 * here serves. A published CRD wins over an excerpt of the same kind.
 * @throws Error naming the fix when a kind of {@link PUBLISHED_CRD_KINDS} has no published CRD.
 */
export function vendoredCrds(): Map<string, CrdSchema> {
  const out = new Map<string, CrdSchema>();
  for (const f of readdirSync(CRD_DIR).filter((n) => n.endsWith('.yaml'))) {
    const doc = parse(readFileSync(join(CRD_DIR, f), 'utf8'), { merge: true }) as Omit<CrdSchema, 'source'> | Omit<CrdSchema, 'source'>[];
    for (const c of Array.isArray(doc) ? doc : [doc]) out.set(`${c.group}/${c.version} ${c.kind}`, { ...c, source: `test/infra/crds/${f}` });
  }
  const published = existsSync(PUBLISHED_CRD_DIR) ? readdirSync(PUBLISHED_CRD_DIR).filter((n) => n.endsWith('.yaml')) : [];
  for (const f of published) {
    const crd = parse(readFileSync(join(PUBLISHED_CRD_DIR, f), 'utf8')) as PublishedCrd;
    if (crd.kind !== 'CustomResourceDefinition') throw new Error(`.tools/crds/${f} is not a CustomResourceDefinition`);
    for (const v of crd.spec.versions) {
      if (!v.served || !v.schema) continue;
      const key = `${crd.spec.group}/${v.name} ${crd.spec.names.kind}`;
      out.set(key, { group: crd.spec.group, version: v.name, kind: crd.spec.names.kind, schema: v.schema.openAPIV3Schema, source: `.tools/crds/${f}` });
    }
  }
  const missing = PUBLISHED_CRD_KINDS.filter((k) => !out.get(k)?.source.startsWith('.tools/'));
  if (missing.length)
    throw new Error(`no published CRD for ${missing.join(', ')} in .tools/crds: run \`bash infra/local/install-infra-tools.sh\` (it fetches them from the operators' Go modules)`);
  return out;
}

/** Where the schema of `apiVersion` + `kind` came from (a file of .tools/crds or test/infra/crds), or null. */
export function crdSource(apiVersion: string, kind: string): string | null {
  return vendoredCrds().get(`${apiVersion} ${kind}`)?.source ?? null;
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
      } else return [`no schema for ${key} in Kubernetes ${this.version} nor in test/infra/crds or .tools/crds`];
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
