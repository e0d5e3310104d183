import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/** The files a tokenizer hash covers, in order (the trainer worker and the reference engine use the same list). */
export const TOKENIZER_HASH_FILES = ['tokenizer.json', 'tokenizer_config.json', 'chat_template.jinja'] as const;

/**
 * The tokenizer hash of a Hugging Face model directory, computed exactly as workers/trainer's
 * `model_io.tokenizer_hash`: sha256 hex over the lines `<name>\0<sha256 hex of the file>\n` for each of
 * {@link TOKENIZER_HASH_FILES} present in `dir`, in that order. Engines, trainer and policy-serving must
 * report the same value for one model. Reads the files; throws the fs error of an unreadable one.
 */
export function tokenizerHash(dir: string): string {
  const h = createHash('sha256');
  for (const name of TOKENIZER_HASH_FILES) {
    const p = join(dir, name);
    if (!existsSync(p)) continue;
    const fileHash = createHash('sha256').update(readFileSync(p)).digest('hex');
    h.update(`${name}\0${fileHash}\n`, 'utf8');
  }
  return h.digest('hex');
}
