"""Batch files: v1 JSON and JSON Lines (hash = libs/grpo's), v2 safetensors, and named errors."""

import json

import pytest

from rstar_trainer.batch import load_batch, read_batch_bytes, write_v2
from rstar_trainer.errors import BatchFormatError, BatchHashMismatchError


def _v1(fx, lines: bool) -> bytes:
    h = fx["header"]
    header = {"protocol": "rstar.grpo-batch/1", "runId": h["runId"], "step": h["step"], "policyVersion": h["policyVersion"],
              "batchHash": fx["expected"]["batchHash"], "tokens": fx["expected"]["tokens"]}
    if lines:
        return ("\n".join([json.dumps(header)] + [json.dumps(s) for s in fx["sequences"]]) + "\n").encode()
    return json.dumps({**header, "sequences": fx["sequences"]}, indent=2).encode()


@pytest.mark.parametrize("lines", [False, True])
def test_v1_document_and_json_lines_hash_like_build_training_batch(fixture_vectors, lines, tmp_path):
    p = tmp_path / "b.json"
    p.write_bytes(_v1(fixture_vectors, lines))
    b = load_batch(str(p), fixture_vectors["expected"]["batchHash"])
    assert b.protocol == "rstar.grpo-batch/1"
    assert b.num_sequences == len(fixture_vectors["sequences"])
    assert b.num_tokens == fixture_vectors["expected"]["tokens"]
    assert b.step == 3
    b2 = load_batch(f"file://{p}")
    assert b2.batch_hash == b.batch_hash


def test_hash_mismatch_is_named(fixture_vectors, tmp_path):
    p = tmp_path / "b.jsonl"
    p.write_bytes(_v1(fixture_vectors, True))
    with pytest.raises(BatchHashMismatchError) as e:
        load_batch(str(p), "0" * 64)
    assert e.value.code == "batch_hash_mismatch" and e.value.actual == fixture_vectors["expected"]["batchHash"]


def test_v2_round_trip(fixture_vectors):
    seqs = fixture_vectors["sequences"]
    b = read_batch_bytes(write_v2(seqs, run_id="r", step=1, policy_version=1), "mem")
    assert b.protocol == "rstar.grpo-batch/2"
    assert b.token_ids.tolist() == [t for s in seqs for t in s["tokenIds"]]
    assert b.loss_mask.tolist() == [m for s in seqs for m in s["lossMask"]]


def _bad(seqs, **patch):
    s = dict(seqs[0])
    s.update(patch)
    return [s] + seqs[1:]


@pytest.mark.parametrize(
    "patch, field",
    [
        ({"lossMask": [1] + [0] * 7}, "lossMask"),  # a model token in first position
        ({"oldLogprobs": [0.0] + [0.5] * 7}, "old_logprobs"),  # positive logprob on a model token
        ({"lossMask": [0, 1]}, "lossMask"),  # length mismatch
    ],
)
def test_malformed_batches_are_refused_with_the_field(fixture_vectors, patch, field):
    seqs = [dict(s) for s in fixture_vectors["sequences"]]
    seqs[0] = {**seqs[0], "tokenIds": seqs[0]["tokenIds"][:8], "lossMask": [0, 0, 0, 1, 1, 1, 1, 1], "oldLogprobs": [0, 0, 0, -1, -1, -1, -1, -1]}
    bad = _bad(seqs, **patch)
    doc = {"protocol": "rstar.grpo-batch/1", "sequences": bad}
    with pytest.raises(BatchFormatError) as e:
        read_batch_bytes(json.dumps(doc).encode(), "mem")
    assert field in (e.value.field or "") or field in e.value.message


def test_unknown_protocol_and_scheme(tmp_path):
    with pytest.raises(BatchFormatError, match="protocol"):
        read_batch_bytes(json.dumps({"protocol": "rstar.grpo-batch/9", "sequences": []}).encode(), "mem")
    with pytest.raises(BatchFormatError, match="scheme"):
        load_batch("s3://bucket/batch.safetensors")
    with pytest.raises(BatchFormatError, match="no such file"):
        load_batch(str(tmp_path / "missing.safetensors"))
