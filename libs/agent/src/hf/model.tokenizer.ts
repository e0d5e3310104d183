import { existsSync, readFileSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { Tokenizer as HfTokenizer } from '@huggingface/tokenizers';
import type { Tokenizer } from '../ports';
import type { PromptRenderer } from '../prompt.renderer';
import { RSTAR2_RENDERER } from '../prompt.renderer';
import { JinjaPromptRenderer } from './jinja.renderer';
import { tokenizerHash } from './tokenizer.hash';
import { TokenizerLoadError } from './tokenizer.errors';

type TokenText = string | { content?: string } | null | undefined;
const text = (t: TokenText): string | null => (typeof t === 'string' ? t : (t?.content ?? null));

/**
 * A Hugging Face model's own tokenizer (`tokenizer.json`, read by @huggingface/tokenizers) behind the
 * agent's {@link Tokenizer} port, with its chat template as the {@link PromptRenderer} and the tokenizer
 * hash the engines and the trainer worker report. `encode` adds no special tokens (the chat template
 * writes them as text); `decode` keeps them, so a sampled end-of-turn token shows in the turn's text.
 */
export class ModelTokenizer implements Tokenizer {
  /** sha256 tokenizer hash of the directory ({@link tokenizerHash}). */
  readonly hash: string;
  /** The end-of-turn (eos) token's text and id. */
  readonly eosText: string;
  readonly eosTokenId: number;
  /** Tokens in the vocabulary, added tokens included. */
  readonly vocabSize: number;
  /** The model's chat template, or the built-in rStar2 template when the directory has none. */
  readonly renderer: PromptRenderer;
  /** Whether {@link renderer} is the model's own template. */
  readonly hasChatTemplate: boolean;

  private constructor(
    readonly dir: string,
    private readonly tok: HfTokenizer,
    config: Record<string, unknown>,
  ) {
    this.hash = tokenizerHash(dir);
    const eos = text(config.eos_token as TokenText);
    const eosId = eos === null ? undefined : tok.token_to_id(eos);
    if (eos === null || eosId === undefined) {
      throw new TokenizerLoadError('tokenizer_invalid', `${join(dir, 'tokenizer_config.json')} names no eos_token of the vocabulary; engines stop turns on it`);
    }
    this.eosText = eos;
    this.eosTokenId = eosId;
    this.vocabSize = tok.get_vocab(true).size;
    const templatePath = join(dir, 'chat_template.jinja');
    const source = existsSync(templatePath) ? readFileSync(templatePath, 'utf8') : typeof config.chat_template === 'string' ? config.chat_template : null;
    this.hasChatTemplate = source !== null;
    this.renderer = source === null ? RSTAR2_RENDERER : new JinjaPromptRenderer(source, eos, { eos_token: eos, bos_token: text(config.bos_token as TokenText) ?? '' });
  }

  /**
   * Load the tokenizer of the model directory `dir` (field names the setting that gave it, for errors).
   * @throws TokenizerLoadError: `model_dir_invalid` (no such directory), `tokenizer_missing` (no
   *   tokenizer.json), `tokenizer_invalid` (unparsable files, no eos token); ChatTemplateError for a chat
   *   template that cannot render the conversation.
   */
  static load(dir: string, field = 'tokenizer'): ModelTokenizer {
    const abs = resolve(dir);
    if (!existsSync(abs) || !statSync(abs).isDirectory()) {
      throw new TokenizerLoadError('model_dir_invalid', `model directory ${abs} does not exist; give the Hugging Face model directory the engines serve`, field);
    }
    const tj = join(abs, 'tokenizer.json');
    if (!existsSync(tj)) {
      throw new TokenizerLoadError('tokenizer_missing', `model directory ${abs} has no tokenizer.json; engines, trainer and policy-serving must share the model's own tokenizer (copy its tokenizer files there)`, field);
    }
    const read = (p: string): Record<string, unknown> => {
      try {
        return JSON.parse(readFileSync(p, 'utf8')) as Record<string, unknown>;
      } catch (e) {
        throw new TokenizerLoadError('tokenizer_invalid', `${p} is not JSON: ${(e as Error).message}`, field);
      }
    };
    const tcPath = join(abs, 'tokenizer_config.json');
    const config = existsSync(tcPath) ? read(tcPath) : {};
    let tok: HfTokenizer;
    try {
      tok = new HfTokenizer(read(tj), config);
    } catch (e) {
      throw new TokenizerLoadError('tokenizer_invalid', `${tj} cannot be loaded by @huggingface/tokenizers: ${(e as Error).message}`, field);
    }
    return new ModelTokenizer(abs, tok, config);
  }

  encode(s: string): number[] {
    return this.tok.encode(s, { add_special_tokens: false }).ids;
  }

  /**
   * The text of `ids` (special tokens kept). A byte-level vocabulary can decode to U+0000, which Postgres
   * cannot store in an event's JSON, so each NUL becomes U+FFFD: the text is for display and parsing, the
   * sampled token ids stay exact in the events.
   */
  decode(ids: readonly number[]): string {
    return this.tok.decode([...ids], { skip_special_tokens: false }).replaceAll('\u0000', '\uFFFD');
  }
}
