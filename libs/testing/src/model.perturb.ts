import { execFileSync } from 'node:child_process';

/**
 * Write to `out` a copy of the Hugging Face model at `src` with every weight moved by seeded Gaussian noise
 * (std 0.05, torch seed 5) and the same tokenizer files: "another checkpoint" of the same architecture and
 * vocabulary, for tests where an engine loads weights behind a run's back. Runs `python` (the workers'
 * venv: torch + transformers). @throws the child's error when the script fails.
 */
export function perturbedModelCopy(python: string, src: string, out: string): void {
  const code = [
    'import os, shutil, sys, torch',
    'from transformers import AutoModelForCausalLM',
    'src, out = sys.argv[1], sys.argv[2]',
    'm = AutoModelForCausalLM.from_pretrained(src, dtype=torch.float32)',
    'g = torch.Generator().manual_seed(5)',
    'with torch.no_grad():',
    '    [p.add_(torch.randn(p.shape, generator=g) * 0.05) for p in m.parameters()]',
    'm.save_pretrained(out)',
    "[shutil.copyfile(os.path.join(src, n), os.path.join(out, n)) for n in os.listdir(src) if n.startswith('tokenizer') or n in ('chat_template.jinja', 'special_tokens_map.json')]",
  ].join('\n');
  execFileSync(python, ['-c', code, src, out], { stdio: 'pipe' });
}
