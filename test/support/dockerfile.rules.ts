/** One instruction of a Dockerfile: keyword (upper case), its arguments (continuations joined), first line. */
export interface Instruction {
  keyword: string;
  args: string;
  line: number;
}

/** A build stage: its `FROM` (image as written and with build-arg defaults applied), name and instructions. */
export interface Stage {
  from: string;
  resolvedFrom: string;
  name: string | null;
  instructions: Instruction[];
}

/**
 * Split a Dockerfile into instructions: `#` comment lines and parser directives dropped, lines ending in
 * `\` joined with the next (comment lines inside a continuation skipped, as Docker does).
 */
export function parseDockerfile(text: string): Instruction[] {
  const out: Instruction[] = [];
  let buf = '';
  let start = 0;
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const raw = lines[i];
    const trimmed = raw.trim();
    if (!buf && (trimmed === '' || trimmed.startsWith('#'))) continue;
    if (buf && trimmed.startsWith('#')) continue;
    if (!buf) start = i + 1;
    if (trimmed.endsWith('\\')) {
      buf += trimmed.slice(0, -1) + ' ';
      continue;
    }
    buf += trimmed;
    const m = /^(\S+)\s*(.*)$/s.exec(buf);
    if (m) out.push({ keyword: m[1].toUpperCase(), args: m[2].trim(), line: start });
    buf = '';
  }
  return out;
}

/** The stages of a Dockerfile; `FROM ${ARG}` is resolved with the defaults of the `ARG`s before the first `FROM`. */
export function stagesOf(instructions: Instruction[]): { globalArgs: Record<string, string>; stages: Stage[] } {
  const globalArgs: Record<string, string> = {};
  const stages: Stage[] = [];
  for (const ins of instructions) {
    if (ins.keyword === 'ARG' && !stages.length) {
      const [k, ...v] = ins.args.split('=');
      globalArgs[k.trim()] = v.join('=').trim();
      continue;
    }
    if (ins.keyword === 'FROM') {
      const parts = ins.args.split(/\s+/).filter((p) => !p.startsWith('--'));
      const from = parts[0];
      const asIdx = parts.findIndex((p) => p.toUpperCase() === 'AS');
      const resolvedFrom = from.replace(/\$\{?(\w+)\}?/g, (_, k: string) => globalArgs[k] ?? `<unset ${k}>`);
      stages.push({ from, resolvedFrom, name: asIdx >= 0 ? parts[asIdx + 1] : null, instructions: [] });
      continue;
    }
    stages.at(-1)?.instructions.push(ins);
  }
  return { globalArgs, stages };
}

/** Whether an image reference names a fixed version: a tag other than `latest` (and not a bare name), or a digest. */
export function isPinnedImage(ref: string): boolean {
  if (ref.includes('@sha256:')) return true;
  const lastSlash = ref.lastIndexOf('/');
  const colon = ref.indexOf(':', lastSlash + 1);
  if (colon < 0) return false;
  const tag = ref.slice(colon + 1);
  return tag !== '' && !/(^|[-_.])latest($|[-_.])/.test(tag) && !tag.includes('<unset');
}

/** What a runtime stage must have; `null` = fine. */
export function runtimeStageProblems(stage: Stage): string[] {
  const problems: string[] = [];
  const users = stage.instructions.filter((i) => i.keyword === 'USER');
  const last = users.at(-1)?.args.split(':')[0];
  if (!last) problems.push(`stage ${stage.name}: no USER (it would run as root)`);
  else if (last === 'root' || last === '0') problems.push(`stage ${stage.name}: last USER is ${last}`);
  const hc = stage.instructions.filter((i) => i.keyword === 'HEALTHCHECK');
  if (!hc.length || hc.some((h) => /^NONE\b/i.test(h.args))) problems.push(`stage ${stage.name}: no HEALTHCHECK`);
  if (!stage.instructions.some((i) => i.keyword === 'ENTRYPOINT' || i.keyword === 'CMD')) problems.push(`stage ${stage.name}: no ENTRYPOINT or CMD`);
  return problems;
}

/**
 * Every problem with a Dockerfile against rstar's rules: multi-stage; every base pinned (no `latest`, no bare
 * name; `FROM ${ARG}` checked through the ARG's default; a stage name is fine); each of `runtimeStages` runs
 * as a non-root USER with a HEALTHCHECK and an entry point.
 */
export function dockerfileProblems(text: string, runtimeStages: readonly string[]): string[] {
  const { stages } = stagesOf(parseDockerfile(text));
  const problems: string[] = [];
  if (stages.length < 2) problems.push(`not multi-stage (${stages.length} FROM)`);
  const names = new Set(stages.map((s) => s.name).filter(Boolean));
  for (const s of stages) {
    if (names.has(s.from)) continue;
    if (!isPinnedImage(s.resolvedFrom)) problems.push(`FROM ${s.from} (${s.resolvedFrom}) is not pinned to a version`);
  }
  for (const want of runtimeStages) {
    const s = stages.find((x) => x.name === want);
    if (!s) problems.push(`no stage named ${want}`);
    else problems.push(...runtimeStageProblems(s));
  }
  if (/:latest\b/.test(text)) problems.push('mentions a :latest tag');
  return problems;
}

/** `pip install` commands of a Dockerfile's RUN instructions (one string per command). */
export function pipInstalls(text: string): string[] {
  return parseDockerfile(text)
    .filter((i) => i.keyword === 'RUN')
    .flatMap((i) => i.args.split(/&&|;/))
    .map((c) => c.trim())
    .filter((c) => /\bpip3?\s+install\b/.test(c));
}
