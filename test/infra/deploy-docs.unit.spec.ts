import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { clearDeployDocsCaches, DeployGuideWalker, docSteps, type DocStep } from '../support/deploy-docs';
import { kustomizeCommand } from '../support/k8s.rules';
import { REPO_ROOT } from '../support/service-process';

const KUSTOMIZE = kustomizeCommand();
const suite = KUSTOMIZE || process.env.CI ? describe : describe.skip;
if (!KUSTOMIZE && !process.env.CI) console.warn('deploy docs: no kustomize (nor kubectl) — run `bash infra/local/install-infra-tools.sh`; these tests are skipped');

const GUIDE = readFileSync(join(REPO_ROOT, 'docs/deploy.md'), 'utf8');

/** Walk a guide's steps; @returns the problems. */
function walk(steps: DocStep[]): string[] {
  const w = new DeployGuideWalker(KUSTOMIZE!);
  try {
    return w.walk(steps);
  } finally {
    w.close();
  }
}
const section = (steps: DocStep[], prefix: string) => steps.filter((s) => s.section.startsWith(prefix));

suite('docs/deploy.md, walked in order against the rendered manifests', () => {
  const steps = docSteps(GUIDE);
  afterAll(clearDeployDocsCaches);
  /** The steps up to and including the first that matches (a mutation needs no more of the guide). */
  const upTo = (xs: DocStep[], re: RegExp) => xs.slice(0, xs.findIndex((s) => re.test(s.text)) + 1);

  it('every step uses only what an earlier step installed or created, from an empty cluster to a watched run, on MI300X, NVIDIA and kind', () => {
    expect(steps.length).toBeGreaterThan(40);
    // The guide's path: the operators, images by digest, secrets, the overlay with the security component,
    // the run submitted with the CLI's credentials, the dashboards; then NVIDIA; then a laptop.
    for (const want of [/helm upgrade --install cnpg /, /build-images\.sh \S+ mi300x/, /kubectl apply -k deploy\/mi300x/, /RSTAR_SECRETS_DIR=\S+\/cli pnpm rstar train --remote/, /port-forward svc\/kube-prometheus-stack-grafana/, /kubectl apply -k infra\/k8s\/overlays\/local/]) {
      expect(steps.some((s) => want.test(s.text)), `a step matching ${want}`).toBe(true);
    }
    expect(walk(steps)).toEqual([]);
  });

  it('applying before the Secrets are created fails, naming the missing Secret', () => {
    const reordered = [...section(steps, '1.'), ...section(steps, '2.'), ...section(steps, '4.'), ...section(steps, '3.')];
    expect(walk(reordered).join('\n')).toMatch(/needs Secret rstar-db-owner in rstar, which no earlier step created/);
  });

  it('an operator left out fails at the first manifest that needs its CRD; a chart without its repository fails', () => {
    const noKeda = upTo(steps, /kubectl apply -k deploy\/mi300x/).filter((s) => !/kedacore\/keda/.test(s.text));
    expect(walk(noKeda).join('\n')).toMatch(/no earlier step installed the CRD of keda\.sh\/v1alpha1 ScaledObject/);
    const noRepo = upTo(steps, /helm upgrade --install cnpg/).filter((s) => !/helm repo add cnpg/.test(s.text));
    expect(walk(noRepo).join('\n')).toMatch(/chart cnpg\/cloudnative-pg: its repository cnpg was never added/);
  });

  it('the secured run without the CLI\'s credentials, a model put on a volume that does not exist yet, and a removed tool all fail', () => {
    const anonymous = upTo(steps, /pnpm rstar train --remote/).map((s) => ({ ...s, text: s.text.replace(/^RSTAR_SECRETS_DIR=\S+ /, '') }));
    expect(walk(anonymous).join('\n')).toMatch(/secured NATS admits only known users/);
    const earlyModel: DocStep = {
      section: 'x', line: 0, text: 'kubectl -n rstar apply -f -',
      stdin: 'apiVersion: batch/v1\nkind: Job\nmetadata: { name: get-model }\nspec:\n  template:\n    spec:\n      restartPolicy: Never\n      containers: [{ name: dl, image: python:3.12.12-slim, command: [huggingface-cli, download, m] }]\n      volumes: [{ name: c, persistentVolumeClaim: { claimName: rstar-checkpoints } }]\n',
    };
    const i = steps.findIndex((s) => s.text.startsWith('kubectl apply -k deploy/mi300x'));
    expect(walk([...steps.slice(0, i), earlyModel]).join('\n')).toMatch(/Job\/get-model needs PersistentVolumeClaim rstar-checkpoints in rstar/);
    expect(walk([{ section: 'x', line: 0, text: 'huggingface-cli download Qwen/Qwen3-14B' }]).join('\n')).toMatch(/huggingface-cli: not a command/);
    expect(walk(upTo(steps, /kubectl get nodes/).filter((s) => !s.text.startsWith('command -v kubectl'))).join('\n')).toMatch(/uses kubectl, which no earlier step checks for or installs/);
  });

  it('images: a deployment whose images were never pushed, or a kind cluster without them loaded, fails', () => {
    const unpinned = upTo(steps, /kubectl apply -k deploy\/mi300x/).filter((s) => !/^cat \/tmp\/rstar-images-mi300x\.yaml/.test(s.text));
    expect(walk(unpinned).join('\n')).toMatch(/image rstar\/control-plane:0\.1\.0 was never built and pushed/);
    const notLoaded = steps.filter((s) => !/kind load docker-image rstar\/trainer/.test(s.text));
    expect(walk(notLoaded).join('\n')).toMatch(/image rstar\/trainer:0\.1\.0-cuda was never loaded into the kind cluster/);
  });
});
