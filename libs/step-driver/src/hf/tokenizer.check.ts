import { RstarError } from '@rstar/contracts';
import type { EngineAdapter } from '@rstar/engines';

/** Engines, trainer and the run's model do not share one tokenizer: the message names both sides and their hashes. */
export class TokenizerMismatchError extends RstarError {
  constructor(
    readonly a: { who: string; hash: string },
    readonly b: { who: string; hash: string },
  ) {
    super(
      'tokenizer_mismatch',
      `tokenizer mismatch: ${a.who} has tokenizer hash ${a.hash}, ${b.who} has ${b.hash}; the engines and the trainer worker must serve the same model's tokenizer (start them on the same model directory)`,
      'policy.path',
    );
  }
}

/**
 * The run-start check of a Hugging Face run: the trainer worker's tokenizer hash (`/v1/info`), the hash of
 * the run's model directory (computed here as workers/trainer does) and every engine's (`/get_model_info`,
 * when the engine reports one; real SGLang does not) must all be equal. Returns the common hash.
 * @throws TokenizerMismatchError naming the first pair that differs.
 */
export async function checkRunTokenizers(o: {
  trainer: { url: string; tokenizerHash: string };
  model?: { dir: string; tokenizerHash: string };
  engines: readonly EngineAdapter[];
}): Promise<string> {
  const seen: Array<{ who: string; hash: string }> = [{ who: `the trainer worker ${o.trainer.url}`, hash: o.trainer.tokenizerHash }];
  if (o.model) seen.push({ who: `the run's model ${o.model.dir}`, hash: o.model.tokenizerHash });
  const infos = await Promise.all(o.engines.map(async (e) => ({ e, info: e.modelInfo ? await e.modelInfo() : null })));
  for (const { e, info } of infos) if (info?.tokenizerHash) seen.push({ who: `engine ${e.id}`, hash: info.tokenizerHash });
  const first = seen[0]!;
  const other = seen.find((s) => s.hash !== first.hash);
  if (other) throw new TokenizerMismatchError(first, other);
  return first.hash;
}
