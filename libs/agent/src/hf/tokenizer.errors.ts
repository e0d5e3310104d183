import { AgentError } from '../agent.errors';

/**
 * A model directory whose tokenizer cannot be used: missing directory (`model_dir_invalid`), no
 * `tokenizer.json` (`tokenizer_missing`), or files that do not parse (`tokenizer_invalid`). `field` is the
 * setting that named the directory.
 */
export class TokenizerLoadError extends AgentError {
  constructor(code: 'model_dir_invalid' | 'tokenizer_missing' | 'tokenizer_invalid', message: string, field = 'tokenizer') {
    super(code, message, field);
  }
}

/** A chat template that cannot render the rStar2 conversation (e.g. it does not continue a conversation by appending). */
export class ChatTemplateError extends AgentError {
  constructor(message: string) {
    super('chat_template_invalid', message, 'chat_template');
  }
}
