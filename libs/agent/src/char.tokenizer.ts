import type { Tokenizer } from './ports';
import { SPECIAL_MARKERS } from './template';

/**
 * A reversible character-level tokenizer: each template marker ({@link SPECIAL_MARKERS}) is one token
 * (ids 0..markers-1), every other Unicode code point `c` is token `markers + c`. It needs no vocabulary
 * file, so tests and debugging tools can run the agent loop without a model's tokenizer.
 */
export class CharTokenizer implements Tokenizer {
  private readonly markers = SPECIAL_MARKERS;

  encode(text: string): number[] {
    const out: number[] = [];
    let i = 0;
    outer: while (i < text.length) {
      if (text[i] === '<') {
        for (let m = 0; m < this.markers.length; m++) {
          if (text.startsWith(this.markers[m], i)) {
            out.push(m);
            i += this.markers[m].length;
            continue outer;
          }
        }
      }
      const cp = text.codePointAt(i) as number;
      out.push(this.markers.length + cp);
      i += cp > 0xffff ? 2 : 1;
    }
    return out;
  }

  decode(ids: readonly number[]): string {
    return ids.map((id) => (id < this.markers.length ? this.markers[id] : String.fromCodePoint(id - this.markers.length))).join('');
  }
}
