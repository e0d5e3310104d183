import { RunConfigSchema, type RunConfig } from '@rstar/contracts';
import { RunRefusedError } from './run.errors';

/**
 * Refuse what the services would ignore in a run submitted with `rstar train --remote` (distributed mode),
 * naming the field and the fix: today the `eval` section, because the optimization service measures no
 * held-out pass@1 (only standalone `rstar train` does, before and after RL). Every other field reaches the
 * services: engines, scheduler and KV budgets through each `RolloutRequested`, trainer.url, data.path and
 * data.heldOutPath (which prompts are trained on) through the step driver.
 * Used by `rstar train --validate` of a config only the services run (`validateOnly`), or with `--remote`.
 * @throws RunRefusedError naming `eval`.
 */
export function refuseRemoteIgnoredFields(config: RunConfig): void {
  const defaults = RunConfigSchema.shape.eval.parse(undefined);
  if (JSON.stringify(config.eval) !== JSON.stringify(defaults)) {
    throw new RunRefusedError(
      'eval is ignored by the services: a run submitted with --remote measures no held-out pass@1 (only a standalone rstar train does); remove the eval section from the config',
      'eval',
    );
  }
}
