"""Sharded checkpoints every N steps, keepLast retention, milestone exports, and a SIGKILL between two
checkpoints: the restarted worker reloads the last sharded checkpoint, replays the committed steps since
(checked against their recorded weight digests) and trains the interrupted step once more, so every
version equals an uninterrupted run's."""

import os

import pytest

from rstar_trainer.checkpoints import CheckpointPolicy
from rstar_trainer.errors import RequestError
from rstar_trainer.service import HOLD_ENV

from conftest import http, random_sequences, serve_trainer, wait_file, wait_result, write_batch

RUN = "run:sharded"
STEPS = 6
POLICY = {"every": 2, "keepLast": 2, "exportEvery": 3}



def _versions_on_disk(path):
    return sorted(int(n[1:]) for n in os.listdir(path) if n.startswith("v") and not n.endswith(".tmp")) if os.path.isdir(path) else []


def test_checkpoint_policy_is_validated_with_named_fields():
    assert CheckpointPolicy.parse(None) is None
    p = CheckpointPolicy.parse({"every": 3, "keepLast": 2})
    assert [p.sharded_at(k) for k in (1, 2, 3, 6)] == [False, False, True, True]
    assert CheckpointPolicy.parse({"every": 3, "final": True}).sharded_at(1)
    for bad, field in (({"every": 0}, "checkpoints.every"), ({"keepLast": "2"}, "checkpoints.keepLast"),
                       ({"evry": 2}, "checkpoints.evry"), ({"final": 1}, "checkpoints.final"), ([], "checkpoints")):
        with pytest.raises(RequestError) as e:
            CheckpointPolicy.parse(bad)
        assert e.value.field == field


def test_sigkill_between_sharded_checkpoints_replays_and_keeps_last_two(tiny_model, trainer, tmp_path):
    batches = [(str(tmp_path / f"b{i}.safetensors"), random_sequences(4, 10, 20, 500, seed=30 + i)) for i in range(STEPS)]
    hashes = [write_batch(p, s, RUN, i, i) for i, (p, s) in enumerate(batches)]

    def body(i):
        return {"batchUri": batches[i][0], "batchHash": hashes[i], "policyVersion": i, "optimizer": {"lr": 1e-2},
                "checkpoints": {**POLICY, "final": i == STEPS - 1}}

    # Reference: the same steps, never interrupted, on the session's worker (conftest).
    for i in range(STEPS):
        assert http("PUT", f"{trainer.url}/v1/runs/{RUN}/steps/{i}", body(i))[0] == 202
        assert wait_result(trainer.url, RUN, i)[0] == 200
    want = [wait_result(trainer.url, RUN, i)[1]["checkpoint"]["hash"] for i in range(STEPS)]

    state, hold = tmp_path / "state", tmp_path / "hold"
    hold.mkdir()
    w = serve_trainer(tiny_model, state, env={HOLD_ENV: str(hold)})
    for i in range(3):
        open(hold / f"release-{RUN}-{i}", "w").close()
        assert http("PUT", f"{w.url}/v1/runs/{RUN}/steps/{i}", body(i))[0] == 202
        assert wait_result(w.url, RUN, i)[0] == 200
    # Version 3 came from the 3rd trained step: no sharded checkpoint of its own (every 2).
    run_dir = state / "runs" / RUN
    assert _versions_on_disk(run_dir / "model") == [2] and _versions_on_disk(run_dir / "optimizer") == [2]
    assert http("PUT", f"{w.url}/v1/runs/{RUN}/steps/3", body(3))[0] == 202
    wait_file(str(hold / f"held-{RUN}-3"), w)  # version 4 in memory, nothing committed
    w.kill()
    assert not (run_dir / "versions" / "4.json").exists()

    w2 = serve_trainer(tiny_model, state)  # restarts from v2's sharded checkpoint, replays step 2, retrains step 3
    try:
        s, r3 = wait_result(w2.url, RUN, 3)
        assert s == 200, r3
        assert r3["attempts"] == 2 and r3["policyVersion"] == 3 and r3["newPolicyVersion"] == 4
        assert r3["checkpoint"]["hash"] == want[3]
        s, run = http("GET", f"{w2.url}/v1/runs/{RUN}")
        assert run["policyVersion"] == 4 and run["versions"] == [0, 1, 2, 3, 4]
        for i in range(4, STEPS):
            assert http("PUT", f"{w2.url}/v1/runs/{RUN}/steps/{i}", body(i))[0] == 202
            s, r = wait_result(w2.url, RUN, i)
            assert s == 200 and r["attempts"] == 1 and r["checkpoint"]["hash"] == want[i]
        # Steps finished before the crash were neither retrained nor answered twice.
        for i in range(3):
            s, r = http("GET", f"{w2.url}/v1/runs/{RUN}/steps/{i}")
            assert s == 200 and r["attempts"] == 1 and r["checkpoint"]["hash"] == want[i]
    finally:
        w2.stop()

    # keepLast 2: sharded checkpoints at v2, v4, v6 (final) -> v4 and v6 are left, model and optimizer alike.
    assert _versions_on_disk(run_dir / "model") == [4, 6]
    assert _versions_on_disk(run_dir / "optimizer") == [4, 6]
    # HF exports: milestones v3 and v6 (exportEvery 3; v6 is also final) plus the two newest others.
    assert _versions_on_disk(state / "checkpoints" / RUN) == [3, 4, 5, 6]


def test_replay_that_gives_other_weights_fails_the_step(tiny_model, tmp_path):
    """A replayed version is checked against the digest recorded when it was first trained: a record that
    does not match (here: altered on disk) fails the step with ``replay_diverged`` instead of training on."""
    import json

    run = "run:diverged"
    batches = [(str(tmp_path / f"d{i}.safetensors"), random_sequences(4, 10, 20, 500, seed=50 + i)) for i in range(4)]
    hashes = [write_batch(p, s, run, i, i) for i, (p, s) in enumerate(batches)]

    def body(i):
        return {"batchUri": batches[i][0], "batchHash": hashes[i], "policyVersion": i, "optimizer": {"lr": 1e-2}, "checkpoints": {"every": 2}}

    state = tmp_path / "state"
    w = serve_trainer(tiny_model, state)
    try:
        for i in range(3):
            assert http("PUT", f"{w.url}/v1/runs/{run}/steps/{i}", body(i))[0] == 202
            assert wait_result(w.url, run, i)[0] == 200
    finally:
        w.stop()
    # Version 3 has no sharded checkpoint (3rd trained step, every 2): a restart must replay step 2.
    vpath = state / "runs" / run / "versions" / "3.json"
    doc = json.loads(vpath.read_text())
    doc["weightsDigest"] = "0" * 64
    vpath.write_text(json.dumps(doc))
    w2 = serve_trainer(tiny_model, state)
    try:
        assert http("PUT", f"{w2.url}/v1/runs/{run}/steps/3", body(3))[0] == 202
        s, r = wait_result(w2.url, run, 3)
        assert s == 200 and r["state"] == "failed", r
        assert r["error"]["code"] == "replay_diverged" and "step 2" in r["error"]["message"]
        assert not (state / "runs" / run / "versions" / "4.json").exists()
    finally:
        w2.stop()
