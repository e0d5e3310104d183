"""SIGKILL of the worker: mid-step (after the update, before the commit) and after a finished step.

The restarted worker trains the interrupted step exactly once more, from the checkpoint of its policy
version, so its weights equal those of a run that was never interrupted; a finished step is answered
from disk without training.
"""

import os

from rstar_trainer.service import HOLD_ENV

from conftest import http, random_sequences, serve_trainer, wait_file, wait_result, write_batch

RUN = "run:crash"



def test_sigkill_mid_step_then_restart_trains_once(tiny_model, trainer, tmp_path):
    batches = [(str(tmp_path / f"b{i}.safetensors"), random_sequences(4, 10, 20, 500, seed=10 + i)) for i in range(2)]
    hashes = [write_batch(p, s, RUN, i, i) for i, (p, s) in enumerate(batches)]
    body = lambda i: {"batchUri": batches[i][0], "batchHash": hashes[i], "policyVersion": i, "optimizer": {"lr": 1e-2}}  # noqa: E731

    # Reference: the same two steps, never interrupted, on the session's worker (conftest).
    for i in range(2):
        assert http("PUT", f"{trainer.url}/v1/runs/{RUN}/steps/{i}", body(i))[0] == 202
        assert wait_result(trainer.url, RUN, i)[0] == 200
    ref_results = [wait_result(trainer.url, RUN, i)[1] for i in range(2)]
    assert [r["attempts"] for r in ref_results] == [1, 1]

    state = tmp_path / "state"
    hold = tmp_path / "hold"
    hold.mkdir()
    w = serve_trainer(tiny_model, state, env={HOLD_ENV: str(hold)})
    open(hold / f"release-{RUN}-0", "w").close()  # step 0 commits normally
    assert http("PUT", f"{w.url}/v1/runs/{RUN}/steps/0", body(0))[0] == 202
    assert wait_result(w.url, RUN, 0)[0] == 200
    assert http("PUT", f"{w.url}/v1/runs/{RUN}/steps/1", body(1))[0] == 202
    wait_file(str(hold / f"held-{RUN}-1"), w)  # updated in memory, nothing committed
    w.kill()
    assert not os.path.exists(state / "runs" / RUN / "versions" / "2.json")

    w2 = serve_trainer(tiny_model, state)  # no hold: the pending step is redone at start
    try:
        s, r1 = wait_result(w2.url, RUN, 1)
        assert s == 200 and r1["attempts"] == 2 and r1["newPolicyVersion"] == 2
        # Trained once from version 1: the same weights (checkpoint hash) as the uninterrupted run.
        assert r1["checkpoint"]["hash"] == ref_results[1]["checkpoint"]["hash"]
        assert r1["loss"] == ref_results[1]["loss"]
        s, run = http("GET", f"{w2.url}/v1/runs/{RUN}")
        assert run["policyVersion"] == 2 and run["versions"] == [0, 1, 2] and run["steps"] == {"0": "done", "1": "done"}
        # Re-sending the step answers from disk.
        s, again = http("PUT", f"{w2.url}/v1/runs/{RUN}/steps/1", body(1))
        assert s == 200 and again == r1
    finally:
        w2.kill()  # SIGKILL after the step finished

    w3 = serve_trainer(tiny_model, state)
    try:
        s, r1b = http("GET", f"{w3.url}/v1/runs/{RUN}/steps/1")
        assert s == 200 and r1b == r1  # nothing redone: attempts still 2
        assert http("GET", f"{w3.url}/healthz")[1]["busy"] is False
    finally:
        w3.stop()
