import { describe, expect, it } from 'vitest';
import { IM_END, SPECIAL_MARKERS, renderPrompt, renderToolCall } from '@rstar/agent';
import { Tokenizer } from './tokenizer';
import { PolicyInputError } from './errors';

describe('Tokenizer', () => {
  const tok = new Tokenizer();

  it('gives every template marker exactly one token and uses IM_END as eos', () => {
    for (const m of SPECIAL_MARKERS) expect(tok.encode(m)).toHaveLength(1);
    expect(tok.encode(IM_END)).toEqual([tok.eosId]);
  });

  it('round-trips template text, and phrase tokens shorten a tool call', () => {
    const text = `${renderPrompt('What is 12 * 34?', { compact: true })}Let me compute this with Python.</reason>\n${renderToolCall('print(12 * 34)')}${IM_END}`;
    const ids = tok.encode(text);
    expect(tok.decode(ids)).toBe(text);
    expect(ids.length).toBeLessThan(40);
  });

  it('maps unknown characters to id 0 and rejects ids outside the vocabulary', () => {
    expect(tok.encode('é')).toEqual([0]);
    expect(() => tok.decode([tok.vocabSize])).toThrow(PolicyInputError);
  });

  it('is reconstructed identically from its spec (checkpoints store the spec)', () => {
    const again = new Tokenizer(JSON.parse(JSON.stringify(tok.spec)));
    expect(again.encode('What is the gcd of 12 and 18?')).toEqual(tok.encode('What is the gcd of 12 and 18?'));
    expect(again.vocabSize).toBe(tok.vocabSize);
  });
});
