import { renderPrompt, renderToolTurn } from './template';

/**
 * How a conversation becomes text (docs/design/protocol.md §1): the prompt up to the start of generation, and the text
 * appended after an assistant turn that made tool calls (the tool results as one user turn, then the next
 * assistant opener). The agent loop tokenizes each piece once and appends the ids; the sampled turns
 * are never rendered again.
 */
export interface PromptRenderer {
  /** Prompt text of `problem`; `compact` drops the system turn (and, for the rStar2 renderer, the instruction). */
  renderPrompt(problem: string, opts?: { tools?: readonly string[]; compact?: boolean }): string;
  /** Text that follows the sampled end-of-turn token of an assistant turn that made tool calls. */
  renderToolTurn(responses: readonly string[]): string;
}

/** The built-in rStar2 template of template.ts (the tiny builtin policy, and models without a chat template). */
export const RSTAR2_RENDERER: PromptRenderer = {
  renderPrompt: (problem, opts) => renderPrompt(problem, opts),
  renderToolTurn: (responses) => renderToolTurn(responses),
};
