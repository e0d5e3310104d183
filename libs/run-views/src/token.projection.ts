import { CharTokenizer } from '@rstar/agent';
import type { EventData } from '@rstar/contracts';
import type { RolloutDetailView } from './views';

const chars = new CharTokenizer();

/**
 * The token-level view of a completed rollout: each response token with its loss-mask bit and sampling
 * logprob, and its text when the built-in char tokenizer decodes the recorded ids back to exactly the
 * recorded response text (the built-in policy's tokenizer); otherwise ids only (the tokenizer of an
 * external model is not known here).
 */
export function tokenView(c: EventData<'RolloutCompleted'>): NonNullable<RolloutDetailView['tokens']> {
  let decodes = false;
  try {
    decodes = chars.decode(c.responseTokenIds) === c.responseText;
  } catch {
    decodes = false; // an id beyond the code-point range: not the char tokenizer
  }
  return {
    tokenizer: decodes ? 'char' : null,
    promptTokens: c.promptTokenIds.length,
    response: c.responseTokenIds.map((id, i) => ({ id, text: decodes ? chars.decode([id]) : null, mask: c.lossMask[i] ?? 0, logprob: c.logprobs[i] ?? 0 })),
  };
}
