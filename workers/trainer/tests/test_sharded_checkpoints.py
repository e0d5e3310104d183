"""Sharded checkpoints every N steps, keepLast retention, milestone exports, and a SIGKILL between two
checkpoints: the restarted worker reloads the last sharded checkpoint, replays the committed steps since
(checked against their recorded weight digests) and trains the interrupted step once more, so every
version equals an uninterrupted run's; and a replay that gives other weights than recorded fails.

Both tests use one worker that is killed and one that restarts on its state (starting a worker is most
of a test's time): the killed one trains ``run:diverged`` to version 3, then ``run:sharded`` until it is
held mid-step 3; the restarted one finishes ``run:sharded`` and is sent ``run:diverged``'s step 3."""

import json
import os

import pytest

from rstar_trainer.checkpoints import CheckpointPolicy
from rstar_trainer.errors import RequestError
from rstar_trainer.service import HOLD_ENV

from conftest import http, random_sequences, serve_trainer, wait_file, wait_result, write_batch

RUN = "run:sharded"
DIVERGED = "run:diverged"
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


def _bodies(tmp_path, run: str, n: int, seed: int, policy) -> list[dict]:
    batches = [(str(tmp_path / f"{run.split(':')[1]}{i}.safetensors"), random_sequences(4, 10, 20, 500, seed=seed + i)) for i in range(n)]
    hashes = [write_batch(p, s, run, i, i) for i, (p, s) in enumerate(batches)]
    return [{"batchUri": batches[i][0], "batchHash": hashes[i], "policyVersion": i, "optimizer": {"lr": 1e-2}, "checkpoints": policy(i)} for i in range(n)]


@pytest.fixture(scope="module")
def restarted(tiny_model, tmp_path_factory):
    """The worker restarted after a SIGKILL, with what the killed one left: ``run:sharded`` was held after
    step 3's update (nothing committed); ``run:diverged`` is at version 3 (checkpoints every 2, so no
    sharded checkpoint of v3: step 2 must be replayed) and v3's recorded weight digest was then altered."""
    tmp = tmp_path_factory.mktemp("sharded")
    bodies = {RUN: _bodies(tmp, RUN, STEPS, 30, lambda i: {**POLICY, "final": i == STEPS - 1}),
              DIVERGED: _bodies(tmp, DIVERGED, 4, 50, lambda i: {"every": 2})}
    state, hold = tmp / "state", tmp / "hold"
    hold.mkdir()
    run_dir = state / "runs" / RUN
    w = serve_trainer(tiny_model, state, env={HOLD_ENV: str(hold)})
    before_kill = {}
    try:
        for run in (DIVERGED, RUN):
            for i in range(3):
                open(hold / f"release-{run}-{i}", "w").close()
                assert http("PUT", f"{w.url}/v1/runs/{run}/steps/{i}", bodies[run][i])[0] == 202
                assert wait_result(w.url, run, i)[0] == 200
        before_kill = {"model": _versions_on_disk(run_dir / "model"), "optimizer": _versions_on_disk(run_dir / "optimizer")}
        assert http("PUT", f"{w.url}/v1/runs/{RUN}/steps/3", bodies[RUN][3])[0] == 202
        wait_file(str(hold / f"held-{RUN}-3"), w)  # version 4 in memory, nothing committed
    finally:
        w.kill()
    before_kill["v4"] = (run_dir / "versions" / "4.json").exists()
    # Version 3 of run:diverged has no sharded checkpoint (3rd trained step, every 2): a restart must replay step 2.
    vpath = state / "runs" / DIVERGED / "versions" / "3.json"
    doc = json.loads(vpath.read_text())
    doc["weightsDigest"] = "0" * 64
    vpath.write_text(json.dumps(doc))
    w2 = serve_trainer(tiny_model, state)  # restarts from v2's sharded checkpoint, replays step 2, retrains step 3
    yield {"worker": w2, "state": state, "bodies": bodies, "beforeKill": before_kill}
    w2.stop()


def test_sigkill_between_sharded_checkpoints_replays_and_keeps_last_two(trainer, restarted):
    body = restarted["bodies"][RUN]
    # Reference: the same steps, never interrupted, on the session's worker (conftest).
    for i in range(STEPS):
        assert http("PUT", f"{trainer.url}/v1/runs/{RUN}/steps/{i}", body[i])[0] == 202
        assert wait_result(trainer.url, RUN, i)[0] == 200
    want = [wait_result(trainer.url, RUN, i)[1]["checkpoint"]["hash"] for i in range(STEPS)]

    # Version 3 came from the 3rd trained step: no sharded checkpoint of its own (every 2).
    state, before = restarted["state"], restarted["beforeKill"]
    run_dir = state / "runs" / RUN
    assert before["model"] == [2] and before["optimizer"] == [2]
    assert before["v4"] is False  # killed after step 3's update, before its commit
    w2 = restarted["worker"]
    s, r3 = wait_result(w2.url, RUN, 3)
    assert s == 200, r3
    assert r3["attempts"] == 2 and r3["policyVersion"] == 3 and r3["newPolicyVersion"] == 4
    assert r3["checkpoint"]["hash"] == want[3]
    s, run = http("GET", f"{w2.url}/v1/runs/{RUN}")
    assert run["policyVersion"] == 4 and run["versions"] == [0, 1, 2, 3, 4]
    for i in range(4, STEPS):
        assert http("PUT", f"{w2.url}/v1/runs/{RUN}/steps/{i}", body[i])[0] == 202
        s, r = wait_result(w2.url, RUN, i)
        assert s == 200 and r["attempts"] == 1 and r["checkpoint"]["hash"] == want[i]
    # Steps finished before the crash were neither retrained nor answered twice.
    for i in range(3):
        s, r = http("GET", f"{w2.url}/v1/runs/{RUN}/steps/{i}")
        assert s == 200 and r["attempts"] == 1 and r["checkpoint"]["hash"] == want[i]

    # keepLast 2: sharded checkpoints at v2, v4, v6 (final) -> v4 and v6 are left, model and optimizer alike.
    assert _versions_on_disk(run_dir / "model") == [4, 6]
    assert _versions_on_disk(run_dir / "optimizer") == [4, 6]
    # HF exports: milestones v3 and v6 (exportEvery 3; v6 is also final) plus the two newest others.
    assert _versions_on_disk(state / "checkpoints" / RUN) == [3, 4, 5, 6]


def test_replay_that_gives_other_weights_fails_the_step(restarted):
    """A replayed version is checked against the digest recorded when it was first trained: a record that
    does not match (here: altered on disk) fails the step with ``replay_diverged`` instead of training on."""
    w2, state = restarted["worker"], restarted["state"]
    assert http("PUT", f"{w2.url}/v1/runs/{DIVERGED}/steps/3", restarted["bodies"][DIVERGED][3])[0] == 202
    s, r = wait_result(w2.url, DIVERGED, 3)
    assert s == 200 and r["state"] == "failed", r
    assert r["error"]["code"] == "replay_diverged" and "step 2" in r["error"]["message"]
    assert not (state / "runs" / DIVERGED / "versions" / "4.json").exists()
