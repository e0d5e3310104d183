import { RstarError } from '@rstar/contracts';
import type { EngineAdapter } from '@rstar/engines';

/** An engine serves another tokenizer than policy-serving's: the message names both hashes. */
export class EngineTokenizerMismatchError extends RstarError {
  constructor(engineId: string, engineHash: string, ownHash: string) {
    super(
      'tokenizer_mismatch',
      `engine ${engineId} serves tokenizer hash ${engineHash}, policy-serving's tokenizer (RSTAR_TOKENIZER_DIR) hashes to ${ownHash}; point RSTAR_TOKENIZER_DIR at the model directory the engines serve`,
      'RSTAR_TOKENIZER_DIR',
    );
  }
}

/**
 * policy-serving's start check: every engine that reports a tokenizer hash (`/get_model_info`; the reference
 * engine does, real SGLang does not) must report `ownHash`. @throws EngineTokenizerMismatchError.
 */
export async function checkEngineTokenizers(ownHash: string, engines: readonly EngineAdapter[]): Promise<void> {
  for (const e of engines) {
    const info = e.modelInfo ? await e.modelInfo() : null;
    if (info?.tokenizerHash && info.tokenizerHash !== ownHash) throw new EngineTokenizerMismatchError(e.id, info.tokenizerHash, ownHash);
  }
}
