import { execFileSync } from 'node:child_process';
import { cpSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureTinyModel, workersPythonForTests } from '@rstar/workers';
import { formatToolResponse } from '../tool-response.formatter';
import { renderToolCall, toolSignature, userPrompt, IM_END, PYTHON_TOOL } from '../template';
import { ModelTokenizer } from './model.tokenizer';
import { TokenizerLoadError } from './tokenizer.errors';

const python = workersPythonForTests();
const CACHE = resolve(__dirname, '../../../../.rstar/models');

/** What transformers (Python) makes of the same directory: token ids, chat-template renderings, tokenizer hash. */
function pythonView(dir: string, texts: string[], problem: string, responses: string[]): { hash: string; ids: number[][]; decoded: string[]; compact: string; full: string; toolTurn: string } {
  const script = `
import json, sys
from transformers import AutoTokenizer
from rstar_trainer.model_io import tokenizer_hash
req = json.load(sys.stdin)
d = req["dir"]
tok = AutoTokenizer.from_pretrained(d)
user = [{"role": "user", "content": req["user"]}]
base = user + [{"role": "assistant", "content": "X"}]
before = tok.apply_chat_template(base, tokenize=False)
after = tok.apply_chat_template(base + [{"role": "tool", "content": r} for r in req["responses"]], tokenize=False, add_generation_prompt=True)
ids = [tok.encode(t, add_special_tokens=False) for t in req["texts"]]
print(json.dumps({
  "hash": tokenizer_hash(d),
  "ids": ids,
  "decoded": [tok.decode(i, skip_special_tokens=False) for i in ids],
  "compact": tok.apply_chat_template(user, tokenize=False, add_generation_prompt=True),
  "full": tok.apply_chat_template(user, tools=req["tools"], tokenize=False, add_generation_prompt=True),
  "toolTurn": after[len(before) - len("${IM_END}\\n") + len("${IM_END}"):],
}))
`;
  const out = execFileSync(python!, ['-c', script], {
    input: JSON.stringify({ dir, texts, user: userPrompt(problem), responses, tools: [toolSignature(PYTHON_TOOL)] }),
    encoding: 'utf8', env: { ...process.env, TOKENIZERS_PARALLELISM: 'false' }, maxBuffer: 16 << 20,
  });
  return JSON.parse(out.trim().split('\n').at(-1)!);
}

describe.skipIf(!python)('ModelTokenizer: a Hugging Face tokenizer.json and chat template in TypeScript, identical to transformers', () => {
  let dir: string;
  let scratch: string;
  beforeAll(async () => {
    dir = await ensureTinyModel(CACHE);
    scratch = mkdtempSync(join(tmpdir(), 'rstar-tok-'));
  }, 300_000);
  afterAll(() => scratch && rmSync(scratch, { recursive: true, force: true }));

  it('encodes, decodes, renders the rStar2 conversation and hashes exactly as the Python side does', () => {
    const tok = ModelTokenizer.load(dir);
    const problem = 'What is 483 * 977?';
    const responses = [formatToolResponse({ status: 'ok', stdout: '471891\n', stderr: '', exitCode: 0, signal: null, wallMs: 10, cpuMs: 9, truncated: false })];
    const texts = [
      tok.renderer.renderPrompt(problem, { compact: true }),
      `Let me compute this with Python.</reason>\n${renderToolCall('print(483 * 977)')}${IM_END}`,
      tok.renderer.renderToolTurn(responses),
      '</reason>\n<answer>\\boxed{471891}</answer><|im_end|>',
      'Tom has 12 apples, 1 000 000 marbles — and ünïcode ✓ 😀\ttabs  spaces\n\n',
    ];
    const py = pythonView(dir, texts, problem, responses);
    expect(tok.hash).toBe(py.hash);
    expect(texts.map((t) => tok.encode(t))).toEqual(py.ids);
    expect(py.ids.map((ids) => tok.decode(ids))).toEqual(py.decoded);
    expect(texts.slice(0, 4).map((t) => tok.decode(tok.encode(t)))).toEqual(texts.slice(0, 4));
    expect(tok.renderer.renderPrompt(problem, { compact: true })).toBe(py.compact);
    expect(tok.renderer.renderToolTurn(responses)).toBe(py.toolTurn);
    // tojson of the tool signature: jinja's JSON formatting is the template engine's; the rest is identical.
    const norm = (s: string) => s.replace(/\{"name".*\}\n<\/tools>/s, '<sig>\n</tools>');
    expect(norm(tok.renderer.renderPrompt(problem))).toBe(norm(py.full));
    expect(tok.hasChatTemplate).toBe(true);
    expect(tok.decode([tok.eosTokenId])).toBe(IM_END);
    // A sampled NUL byte decodes to U+FFFD (Postgres refuses U+0000 in an event's JSON).
    expect(tok.decode(tok.encode('a\u0000b'))).toBe('a\uFFFDb');
  }, 120_000);

  it('refuses a missing directory and one without tokenizer.json, naming the field', () => {
    expect(() => ModelTokenizer.load(join(scratch, 'nope'), 'RSTAR_TOKENIZER_DIR')).toThrowError(TokenizerLoadError);
    try {
      ModelTokenizer.load(join(scratch, 'nope'), 'RSTAR_TOKENIZER_DIR');
    } catch (e) {
      expect(e).toMatchObject({ code: 'model_dir_invalid', field: 'RSTAR_TOKENIZER_DIR' });
    }
    const bare = join(scratch, 'bare');
    cpSync(dir, bare, { recursive: true });
    rmSync(join(bare, 'tokenizer.json'));
    expect(() => ModelTokenizer.load(bare)).toThrowError(/no tokenizer\.json/);
    writeFileSync(join(bare, 'tokenizer.json'), '{not json');
    expect(() => ModelTokenizer.load(bare)).toThrowError(expect.objectContaining({ code: 'tokenizer_invalid' }));
  });
});
