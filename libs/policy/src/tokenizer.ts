import { IM_END, PYTHON_TOOL, SPECIAL_MARKERS } from '@rstar/agent';
import { PolicyInputError } from './errors';

/** Serializable description of a tokenizer; stored in every checkpoint. */
export interface TokenizerSpec {
  kind: 'char-v1';
  /** Multi-character tokens (template markers first, then phrase tokens), each one token. */
  pieces: string[];
  /** Single characters, each one token. */
  chars: string[];
}

/**
 * Phrase tokens: the fixed JSON skeleton of a tool call and the most frequent phrases of the task family.
 * POLICY-NOTES: ~10 phrase tokens shorten traces from ~80 to ~47 tokens, the cheapest speed-up there is.
 */
export const PHRASE_TOKENS: readonly string[] = [
  // renderToolCall writes compact JSON (JSON.stringify without spaces).
  `{"name":"${PYTHON_TOOL}","arguments":{"code":"`,
  '","input":""}}',
  'user\n',
  'assistant\n',
  'stdout: ',
  'execution time: ',
  '\\boxed{',
  'Let me compute this with Python.',
  'What is ',
  'What is the sum of the integers from ',
  'How many integers from 1 to ',
  ' are divisible by ',
  ' modulo ',
  'print(',
  'import math; print(math.',
  'sum(range(',
  'len(range(',
  ' + 1)',
];

const UNK_CHAR = '\u0000';

/**
 * Character-level tokenizer with one token per template marker (docs/design/protocol.md §1) and per phrase token.
 * Id 0 is padding/unknown (decodes to U+FFFD), then the pieces, then printable ASCII, `\n` and `\t`.
 * Encoding is greedy longest match over the pieces, else one token per character. `eos` = IM_END.
 */
export class Tokenizer {
  readonly vocabSize: number;
  readonly padId = 0;
  readonly eosId: number;
  private readonly pieceIds = new Map<string, number>();
  private readonly charIds = new Map<string, number>();
  private readonly idToText: string[];
  private readonly byFirstChar = new Map<string, string[]>();

  constructor(readonly spec: TokenizerSpec = Tokenizer.defaultSpec()) {
    this.idToText = [UNK_CHAR];
    for (const p of spec.pieces) {
      this.pieceIds.set(p, this.idToText.length);
      this.idToText.push(p);
      const list = this.byFirstChar.get(p[0]) ?? [];
      list.push(p);
      list.sort((a, b) => b.length - a.length);
      this.byFirstChar.set(p[0], list);
    }
    for (const c of spec.chars) {
      this.charIds.set(c, this.idToText.length);
      this.idToText.push(c);
    }
    this.vocabSize = this.idToText.length;
    this.eosId = this.pieceIds.get(IM_END)!;
  }

  /** The default spec: template markers, {@link PHRASE_TOKENS}, printable ASCII plus `\n`, `\t`. */
  static defaultSpec(): TokenizerSpec {
    const chars = ['\n', '\t'];
    for (let c = 32; c < 127; c++) chars.push(String.fromCharCode(c));
    return { kind: 'char-v1', pieces: [...SPECIAL_MARKERS, ...PHRASE_TOKENS], chars };
  }

  /** Text -> token ids. Characters outside the vocabulary map to id 0 (unknown). */
  encode(text: string): number[] {
    const ids: number[] = [];
    let i = 0;
    while (i < text.length) {
      const ch = text[i];
      const cands = this.byFirstChar.get(ch);
      let matched = false;
      if (cands) {
        for (const p of cands) {
          if (text.startsWith(p, i)) {
            ids.push(this.pieceIds.get(p)!);
            i += p.length;
            matched = true;
            break;
          }
        }
      }
      if (!matched) {
        ids.push(this.charIds.get(ch) ?? this.padId);
        i += 1;
      }
    }
    return ids;
  }

  /** Token ids -> text. Throws {@link PolicyInputError} for an id outside the vocabulary. */
  decode(ids: readonly number[]): string {
    let s = '';
    for (const id of ids) s += this.tokenText(id);
    return s;
  }

  /** Text of one token (U+FFFD for id 0). */
  tokenText(id: number): string {
    if (!Number.isInteger(id) || id < 0 || id >= this.vocabSize) {
      throw new PolicyInputError(`token id ${id} is outside the vocabulary [0, ${this.vocabSize}) (send ids produced by this tokenizer)`, 'tokenIds');
    }
    return id === 0 ? '\uFFFD' : this.idToText[id];
  }

  /** Id of a marker or phrase token, e.g. `idOf(TOOL_CALL_CLOSE)`; undefined when not a single token. */
  idOf(piece: string): number | undefined {
    return this.pieceIds.get(piece) ?? this.charIds.get(piece);
  }
}
