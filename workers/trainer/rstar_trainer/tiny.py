"""``make-tiny``: the hf-tiny model, built offline.

A randomly initialised (seeded) Qwen2-architecture causal LM of a few hundred thousand parameters and a
byte-level BPE tokenizer trained with the ``tokenizers`` library on a built-in corpus of rStar2-format
conversations (plus ``--corpus`` files), with a chat template for the rStar2 format (docs/design/protocol.md §1):
ChatML turns, a ``# Tools`` system section, tool results as a user turn of ``<tool_response>`` blocks,
and a generation prompt that opens the assistant turn with ``<reason>``. The directory is a normal
Hugging Face model directory (transformers and @huggingface/tokenizers load it).
"""

from __future__ import annotations

import json
import os
import random

IM_START, IM_END, EOT = "<|im_start|>", "<|im_end|>", "<|endoftext|>"
MARKERS = ["<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>", "<reason>", "</reason>", "<answer>", "</answer>"]
PYTHON_TOOL = "python_code_with_standard_io"
# Qwen2's pre-tokenizer pattern (contractions, letters with one leading non-letter, single digits,
# punctuation runs, newlines, spaces).
QWEN2_SPLIT = r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""

SYSTEM_HEAD = (
    "You are a helpful assistant. You reason inside <reason> </reason> and give the final answer inside <answer> </answer>."
    "\n\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\n<tools>"
)
SYSTEM_TAIL = (
    "\n</tools>\n\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:"
    '\n<tool_call>\n{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call>'
)

# Jinja chat template (rendered by transformers in Python and @huggingface/jinja in TypeScript). Jinja
# string literals below use \n escapes; the system text is the rStar2 one (libs/agent template.ts).
CHAT_TEMPLATE = (
    "{%- if messages and messages[0].role == 'system' -%}"
    "{{- '<|im_start|>system\\n' + messages[0].content + '<|im_end|>\\n' -}}"
    "{%- elif tools -%}"
    "{{- '<|im_start|>system\\nYou are a helpful assistant. You reason inside <reason> </reason> and give the final answer inside "
    "<answer> </answer>.\\n\\n# Tools\\n\\nYou may call one or more functions to assist with the user query.\\n\\n<tools>' -}}"
    "{%- for tool in tools -%}{{- '\\n' + (tool | tojson) -}}{%- endfor -%}"
    "{{- '\\n</tools>\\n\\nFor each function call, return a json object with function name and arguments within "
    "<tool_call></tool_call> XML tags:\\n<tool_call>\\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\\n</tool_call><|im_end|>\\n' -}}"
    "{%- endif -%}"
    "{%- for m in messages -%}"
    "{%- if m.role == 'system' and loop.first -%}"
    "{%- elif m.role == 'tool' -%}"
    "{%- if loop.first or messages[loop.index0 - 1].role != 'tool' -%}{{- '<|im_start|>user' -}}{%- endif -%}"
    "{{- '\\n<tool_response>\\n' + m.content + '\\n</tool_response>' -}}"
    "{%- if loop.last or messages[loop.index0 + 1].role != 'tool' -%}{{- '<|im_end|>\\n' -}}{%- endif -%}"
    "{%- else -%}"
    "{{- '<|im_start|>' + m.role + '\\n' + m.content + '<|im_end|>\\n' -}}"
    "{%- endif -%}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{- '<|im_start|>assistant\\n<reason>' -}}{%- endif -%}"
)


def builtin_corpus(seed: int, n: int = 1500) -> list[str]:
    """Synthetic rStar2-format conversations (arithmetic word problems, Python tool calls, tool
    responses, boxed answers): enough text for a small BPE vocabulary, no download."""
    rng = random.Random(seed)
    out = [SYSTEM_HEAD + SYSTEM_TAIL]
    ops = [("+", lambda a, b: a + b, "sum"), ("-", lambda a, b: a - b, "difference"), ("*", lambda a, b: a * b, "product")]
    words = ["apples", "marbles", "coins", "books", "points", "cards", "steps", "miles", "boxes", "eggs"]
    for _ in range(n):
        a, b = rng.randint(0, 999), rng.randint(0, 999)
        sym, fn, name = rng.choice(ops)
        w = rng.choice(words)
        problem = rng.choice([
            f"What is {a} {sym} {b}?",
            f"Compute the {name} of {a} and {b}.",
            f"Tom has {a} {w} and gets {b} more. How many {w} does he have?",
            f"Find x if x = {a} {sym} {b}.",
        ])
        code = rng.choice([f"print({a} {sym} {b})", f"x = {a} {sym} {b}\nprint(x)", f"a, b = {a}, {b}\nprint(a {sym} b)"])
        call = json.dumps({"name": PYTHON_TOOL, "arguments": {"code": code, "input": ""}})
        ans = fn(a, b)
        out.append(
            f"{IM_START}user\nPut the final answer inside <answer> </answer> as \\boxed{{}}.\n{problem}{IM_END}\n"
            f"{IM_START}assistant\n<reason>Let me compute it with Python.</reason>\n<tool_call>\n{call}\n</tool_call>{IM_END}\n"
            f"{IM_START}user\n<tool_response>\nstdout: {ans}\n\nexecution time: 0.0{rng.randint(1, 9)}s\n</tool_response>{IM_END}\n"
            f"{IM_START}assistant\n<reason>The result is {ans}.</reason>\n<answer>\\boxed{{{ans}}}</answer>{IM_END}"
        )
    return out


def build_tokenizer(corpus: list[str], vocab_size: int):
    """Train a byte-level BPE (GPT-2 style pre-tokenisation, every byte in the base alphabet) and add
    the ChatML specials and the rStar2 markers as single tokens."""
    from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    # Qwen2's own normalizer and pre-tokenizer: transformers rebuilds a qwen2 model's tokenizer with them
    # whatever tokenizer.json says, so tokenizer.json must carry the same ones for TypeScript
    # (@huggingface/tokenizers) and Python to split text alike (digits one by one, among others).
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(QWEN2_SPLIT), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=False),
    ])
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        min_frequency=2,
        special_tokens=[EOT, IM_START, IM_END],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(corpus, trainer=trainer)
    tok.add_tokens([AddedToken(m, special=False, normalized=False) for m in MARKERS])
    return tok


def make_tiny(out: str, *, corpus_files: list[str] | None = None, seed: int = 0, vocab_size: int = 2048, hidden_size: int = 96,
              layers: int = 2, heads: int = 4, kv_heads: int = 2, intermediate_size: int = 256, max_positions: int = 4096) -> dict:
    """Write the hf-tiny model directory to ``out`` and return a summary (parameters, vocabulary, ids)."""
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    import torch
    from transformers import GenerationConfig, PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM

    from .policy import quiet_transformers

    quiet_transformers()
    texts = builtin_corpus(seed)
    for path in corpus_files or []:
        with open(path, encoding="utf-8") as f:
            texts.extend(line for line in f.read().splitlines() if line.strip())
    tok = build_tokenizer(texts, vocab_size)
    hf_tok = PreTrainedTokenizerFast(
        tokenizer_object=tok, eos_token=IM_END, pad_token=EOT, unk_token=None, bos_token=None, chat_template=CHAT_TEMPLATE,
        model_max_length=max_positions, clean_up_tokenization_spaces=False,
    )
    ids = {t: tok.token_to_id(t) for t in (EOT, IM_START, IM_END)}
    vocab = tok.get_vocab_size(with_added_tokens=True)
    config = Qwen2Config(
        vocab_size=vocab, hidden_size=hidden_size, intermediate_size=intermediate_size, num_hidden_layers=layers,
        num_attention_heads=heads, num_key_value_heads=kv_heads, max_position_embeddings=max_positions,
        tie_word_embeddings=True, rope_theta=10000.0, bos_token_id=None, eos_token_id=ids[IM_END], pad_token_id=ids[EOT],
        use_cache=True, dtype="float32",
    )
    torch.manual_seed(seed)
    model = Qwen2ForCausalLM(config)
    model.generation_config = GenerationConfig(eos_token_id=[ids[IM_END], ids[EOT]], pad_token_id=ids[EOT], do_sample=True, temperature=1.0, top_p=1.0)
    os.makedirs(out, exist_ok=True)
    model.save_pretrained(out)
    hf_tok.save_pretrained(out)
    params = sum(p.numel() for p in model.parameters())
    return {"out": os.path.abspath(out), "parameters": params, "vocabSize": vocab, "eosTokenId": ids[IM_END], "padTokenId": ids[EOT],
            "imStartId": ids[IM_START], "layers": layers, "hiddenSize": hidden_size}


def make_tiny_cli(args) -> int:
    summary = make_tiny(
        args.out, corpus_files=args.corpus, seed=args.seed, vocab_size=args.vocab_size, hidden_size=args.hidden_size,
        layers=args.layers, heads=args.heads, kv_heads=args.kv_heads, intermediate_size=args.intermediate_size, max_positions=args.max_positions,
    )
    print(json.dumps(summary))
    return 0
