import { Template } from '@huggingface/jinja';
import type { PromptRenderer } from '../prompt.renderer';
import { PYTHON_TOOL, toolSignature, userPrompt } from '../template';
import { ChatTemplateError } from './tokenizer.errors';

type Message = { role: string; content: string };

/** Stands for an assistant turn's content while the tool turn is rendered (never reaches a model). */
const SENTINEL = '\u0000rstar-assistant-turn\u0000';

/**
 * The rStar2 conversation rendered with a model's own chat template (`chat_template.jinja` or the
 * `chat_template` of tokenizer_config.json) by @huggingface/jinja: the prompt is the user turn
 * (instruction + problem, docs/design/protocol.md §1) with the tool signatures as `tools` (none when `compact`), and
 * the generation prompt; tool results are `tool` messages. The tool turn is the difference between the
 * conversation rendered with and without the tool messages, minus the end-of-turn text the model sampled
 * itself, so appending its tokens continues exactly what the template would have produced.
 */
export class JinjaPromptRenderer implements PromptRenderer {
  private readonly template: Template;

  /**
   * `source`: the template text; `eosText`: the text of the end-of-turn token the engine stops on (it ends
   * every sampled turn); `specials`: bos/eos strings the template may reference.
   * @throws ChatTemplateError when the template does not parse or does not continue a conversation by appending.
   */
  constructor(
    source: string,
    private readonly eosText: string,
    private readonly specials: Record<string, string | null> = {},
  ) {
    try {
      this.template = new Template(source);
    } catch (e) {
      throw new ChatTemplateError(`the chat template does not parse: ${(e as Error).message}`);
    }
    this.renderToolTurn(['probe']);
  }

  private render(messages: Message[], tools: object[] | undefined, addGenerationPrompt: boolean): string {
    try {
      return this.template.render({ ...this.specials, messages, ...(tools ? { tools } : {}), add_generation_prompt: addGenerationPrompt });
    } catch (e) {
      throw new ChatTemplateError(`the chat template failed to render: ${(e as Error).message}`);
    }
  }

  renderPrompt(problem: string, opts: { tools?: readonly string[]; compact?: boolean } = {}): string {
    const tools = opts.compact ? undefined : (opts.tools ?? [PYTHON_TOOL]).map((t) => toolSignature(t));
    return this.render([{ role: 'user', content: userPrompt(problem) }], tools, true);
  }

  renderToolTurn(responses: readonly string[]): string {
    const base: Message[] = [{ role: 'user', content: 'q' }, { role: 'assistant', content: SENTINEL }];
    const before = this.render(base, undefined, false);
    const after = this.render([...base, ...responses.map((r) => ({ role: 'tool', content: r }))], undefined, true);
    if (!after.startsWith(before)) throw new ChatTemplateError('the chat template renders a conversation differently once tool messages follow; it cannot be continued by appending');
    const tail = before.slice(before.indexOf(SENTINEL) + SENTINEL.length);
    if (!tail.startsWith(this.eosText)) {
      throw new ChatTemplateError(`the chat template does not end an assistant turn with the end-of-turn token ${JSON.stringify(this.eosText)} (it writes ${JSON.stringify(tail.slice(0, 40))})`);
    }
    return tail.slice(this.eosText.length) + after.slice(before.length);
  }
}
