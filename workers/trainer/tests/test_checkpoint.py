"""Checkpoints: a loadable HF directory with a tied lm_head, manifest + STABLE, tamper detection, and
optimizer state that resumes training exactly."""

import json
import os

import pytest
import torch

from rstar_trainer.batch import read_batch_bytes, write_v2
from rstar_trainer.config import LossConfig, OptimizerConfig
from rstar_trainer.distributed import DistContext
from rstar_trainer.errors import CheckpointIntegrityError
from rstar_trainer.model_io import MANIFEST, STABLE, sha256_file, tokenizer_hash, verify_checkpoint
from rstar_trainer.policy import PolicyTrainer

from conftest import random_sequences

OPT = OptimizerConfig.parse({"lr": 1e-2, "microBatch": 2})


def _batch(seed):
    return read_batch_bytes(write_v2(random_sequences(4, 8, 16, 500, seed=seed), run_id="ck", step=0, policy_version=0), "mem")


def _trainer(model):
    t = PolicyTrainer(model, DistContext(), torch.float32)
    t.load(model)
    return t


def test_round_trip_tied_embeddings_manifest_and_stable(tiny_model, tmp_path):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    t = _trainer(tiny_model)
    t.train_step(_batch(1), LossConfig(), OPT, "grpo", 0)
    out = str(tmp_path / "v1")
    digest = t.save(out, str(tmp_path / "opt" / "v1.pt"), {"runId": "ck", "policyVersion": 1})
    files = sorted(os.listdir(out))
    assert STABLE in files and MANIFEST in files and "model.safetensors" in files and "tokenizer.json" in files
    assert not os.path.exists(out + ".tmp")
    manifest = json.load(open(os.path.join(out, MANIFEST)))
    assert digest == sha256_file(os.path.join(out, MANIFEST))
    assert manifest["policyVersion"] == 1 and manifest["format"] == "rstar.checkpoint-manifest/1"
    assert sorted(manifest["files"]) == sorted(f for f in files if f not in (MANIFEST, STABLE))
    for name, meta in manifest["files"].items():
        assert meta["sha256"] == sha256_file(os.path.join(out, name))
    assert tokenizer_hash(out) == tokenizer_hash(tiny_model)  # tokenizer files copied byte for byte
    assert verify_checkpoint(out)[0] == digest

    # save_pretrained left the tied lm_head out; transformers ties it again on load.
    from safetensors import safe_open

    with safe_open(os.path.join(out, "model.safetensors"), "pt") as f:
        assert "lm_head.weight" not in f.keys()
    m = AutoModelForCausalLM.from_pretrained(out, dtype=torch.float32)
    assert m.lm_head.weight.data_ptr() == m.model.embed_tokens.weight.data_ptr()
    sd = {k: v for k, v in t.model.state_dict().items()}
    for k, v in m.state_dict().items():
        assert torch.equal(v, sd[k]), k
    assert AutoTokenizer.from_pretrained(out).eos_token == "<|im_end|>"


def test_tampered_or_unfinished_checkpoints_are_refused(tiny_model, tmp_path):
    t = _trainer(tiny_model)
    out = str(tmp_path / "v1")
    t.save(out, str(tmp_path / "opt.pt"), {"policyVersion": 1})
    with open(os.path.join(out, "config.json"), "a") as f:
        f.write(" ")
    with pytest.raises(CheckpointIntegrityError, match="config.json"):
        verify_checkpoint(out)
    os.remove(os.path.join(out, STABLE))
    with pytest.raises(CheckpointIntegrityError, match="STABLE"):
        verify_checkpoint(out)


def test_optimizer_state_resumes_training_exactly(tiny_model, tmp_path):
    a = _trainer(tiny_model)
    a.train_step(_batch(1), LossConfig(), OPT, "grpo", 0)
    a.save(str(tmp_path / "v1"), str(tmp_path / "v1.pt"), {"policyVersion": 1})
    a.train_step(_batch(2), LossConfig(), OPT, "grpo", 1)

    b = PolicyTrainer(tiny_model, DistContext(), torch.float32)
    b.load(str(tmp_path / "v1"), str(tmp_path / "v1.pt"))
    b.train_step(_batch(2), LossConfig(), OPT, "grpo", 1)
    sa, sb = a.model.state_dict(), b.model.state_dict()
    for k in sa:
        assert torch.allclose(sa[k], sb[k], atol=1e-7, rtol=0), k

    # Without the optimizer state (fresh AdamW moments) the second step lands elsewhere.
    c = PolicyTrainer(tiny_model, DistContext(), torch.float32)
    c.load(str(tmp_path / "v1"))
    c.train_step(_batch(2), LossConfig(), OPT, "grpo", 1)
    assert any(not torch.allclose(sa[k], c.model.state_dict()[k], atol=1e-6) for k in sa)
