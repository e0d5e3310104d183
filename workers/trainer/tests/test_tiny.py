"""make-tiny: an offline, seeded hf-tiny model directory that transformers loads, with the rStar2 template."""

import json
import os
import subprocess

from transformers import AutoModelForCausalLM, AutoTokenizer

from rstar_trainer.model_io import sha256_file

from conftest import py


def test_make_tiny_cli_is_deterministic_and_loadable(tiny_model, tmp_path):
    out = tmp_path / "tiny"
    r = subprocess.run(py("rstar_trainer", "make-tiny", "--out", str(out)), capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    summary = json.loads(r.stdout.strip().splitlines()[-1])
    assert 100_000 < summary["parameters"] < 1_000_000 and 256 + 11 < summary["vocabSize"] <= 2048 + 8
    names = sorted(os.listdir(out))
    assert {"config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json", "chat_template.jinja"} <= set(names)
    # Same seed, same bytes (the session fixture was built in-process with seed 0).
    for n in names:
        assert sha256_file(str(out / n)) == sha256_file(os.path.join(tiny_model, n)), n
    cfg = json.load(open(out / "config.json"))
    assert cfg["model_type"] == "qwen2" and cfg["tie_word_embeddings"] is True
    m = AutoModelForCausalLM.from_pretrained(str(out))
    assert sum(p.numel() for p in m.parameters()) == summary["parameters"]


def test_tokenizer_and_rstar2_template(tiny_model):
    tok = AutoTokenizer.from_pretrained(tiny_model)
    assert tok.eos_token == "<|im_end|>" and tok.pad_token == "<|endoftext|>"
    # Every template marker is one token; byte-level BPE round-trips any text.
    for marker in ("<|im_start|>", "<|im_end|>", "<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>", "<reason>", "</reason>", "<answer>", "</answer>"):
        assert len(tok.encode(marker, add_special_tokens=False)) == 1, marker
    text = "π ≈ 3.14159 🙂\n\tprint(12 + 35)"
    assert tok.decode(tok.encode(text, add_special_tokens=False)) == text
    # tokenizer.json carries Qwen2's pre-tokenizer, so the file alone (as TypeScript reads it) splits like
    # transformers' Qwen2 tokenizer: digits one by one.
    from tokenizers import Tokenizer

    raw = Tokenizer.from_file(os.path.join(tiny_model, "tokenizer.json"))
    for t in (text, "The result is 47.</reason><|im_end|>", '{"code": "print(12345)"}'):
        assert raw.encode(t, add_special_tokens=False).ids == tok.encode(t, add_special_tokens=False)
    assert [tok.decode([i]) for i in tok.encode(" 47", add_special_tokens=False)] == [" ", "4", "7"]
    msgs = [
        {"role": "user", "content": "What is 2+3?"},
        {"role": "assistant", "content": "<reason>calc</reason>\n<tool_call>\n{}\n</tool_call>"},
        {"role": "tool", "content": "stdout: 5"},
        {"role": "tool", "content": "stdout: 6"},
    ]
    s = tok.apply_chat_template(msgs, tools=[{"name": "python_code_with_standard_io"}], add_generation_prompt=True, tokenize=False)
    assert s.startswith("<|im_start|>system\nYou are a helpful assistant. You reason inside <reason> </reason>")
    assert '<tools>\n{"name": "python_code_with_standard_io"}\n</tools>' in s
    assert s.endswith(
        "<|im_start|>user\nWhat is 2+3?<|im_end|>\n<|im_start|>assistant\n<reason>calc</reason>\n<tool_call>\n{}\n</tool_call><|im_end|>\n"
        "<|im_start|>user\n<tool_response>\nstdout: 5\n</tool_response>\n<tool_response>\nstdout: 6\n</tool_response><|im_end|>\n"
        "<|im_start|>assistant\n<reason>"
    )
    no_tools = tok.apply_chat_template([{"role": "user", "content": "hi"}], add_generation_prompt=True, tokenize=False)
    assert no_tools == "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n<reason>"
