"""Weight sync on the device: disk vs torch.distributed into a running SGLang, checked by behaviour.

Against a trainer worker and an SGLang server that both serve ``--model`` (weights-check.sh starts them):

1. step 0: SGLang samples a few responses (``return_logprob``); the worker trains on them and reports the
   engine/trainer logprob drift of those tokens (``logprobDrift.maxAbs``: the step-0 drift);
2. disk: the step's checkpoint write (step seconds - train seconds) + SGLang ``/update_weights_from_disk``;
3. distributed: the worker and SGLang join one group (``/v1/weight-sync/group`` +
   ``/init_weights_update_group``), then per bucket the worker broadcasts while SGLang is in
   ``/update_weights_from_distributed`` (bf16 on the wire);
4. after each sync the probe: SGLang's ``input_token_logprobs`` (``logprob_start_len: 0``) of 32 fixed tokens
   against the worker's ``/v1/probe`` of the same policy version.

Prints one JSON line per phase and a last line ``{"check": "weights", ...}`` with seconds per GB of each
path; exits 1 when a probe is beyond ``--probe-tol`` or the step-0 drift beyond ``--drift-max``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "trainer", "tests"))

from helpers import http, wait_result  # noqa: E402

RUN = "gpu-weights-check"


def probe_tokens(vocab: int, n: int = 32) -> list[int]:
    """The same fixed probe as libs/engines/src/probe.check.ts ``probeTokens``."""
    span = max(1, vocab - 3)
    return [3 + ((i * 7919 + 104729) % span) for i in range(n)]


def probe(trainer: str, engine: str, version: int, vocab: int) -> dict:
    ids = probe_tokens(vocab)
    s, t = http("POST", f"{trainer}/v1/probe", {"tokenIds": ids, "runId": RUN, "policyVersion": version})
    assert s == 200, t
    t0 = time.perf_counter()
    s, e = http("POST", f"{engine}/generate", {"input_ids": ids, "return_logprob": True, "logprob_start_len": 0,
                                               "sampling_params": {"max_new_tokens": 1, "temperature": 0}})
    assert s == 200, e
    ms = (time.perf_counter() - t0) * 1000
    eng = [x[0] for x in e["meta_info"]["input_token_logprobs"][1:]]
    diffs = [abs(a - b) for a, b in zip(t["logprobs"], eng)]
    k = max(range(len(diffs)), key=diffs.__getitem__)
    return {"maxAbsDiff": diffs[k], "meanAbsDiff": sum(diffs) / len(diffs), "worst": {"position": k + 1, "tokenId": ids[k + 1], "trainer": t["logprobs"][k], "engine": eng[k]}, "probeMs": ms}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--trainer", required=True)
    ap.add_argument("--engine", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--backend", default="gloo", help="nccl needs the trainer and SGLang on different GPUs (NCCL refuses two ranks on one)")
    ap.add_argument("--master-port", type=int, default=29650)
    ap.add_argument("--bucket-mb", type=float, default=512)
    ap.add_argument("--probe-tol", type=float, default=0.15)
    ap.add_argument("--drift-max", type=float, default=0.5)
    a = ap.parse_args()

    from rstar_trainer.batch import write_v2

    s, info = http("GET", f"{a.trainer}/v1/info")
    vocab = info["vocabSize"]
    # 1. Step 0 on SGLang's own samples: the drift is SGLang's sampling logprobs against the trainer's.
    seqs = []
    for i in range(8):
        prompt = [3 + (i * 131 + j * 17) % (vocab - 3) for j in range(48)]
        s, g = http("POST", f"{a.engine}/generate", {"input_ids": prompt, "return_logprob": True,
                                                     "sampling_params": {"max_new_tokens": 96, "temperature": 1.0, "sampling_seed": i}})
        assert s == 200, g
        out = [x[1] for x in g["meta_info"]["output_token_logprobs"]]
        lps = [x[0] for x in g["meta_info"]["output_token_logprobs"]]
        seqs.append({"rolloutId": f"r{i}", "groupId": f"g{i // 4}", "tokenIds": prompt + out, "lossMask": [0] * len(prompt) + [1] * len(out),
                     "oldLogprobs": [0.0] * len(prompt) + lps, "advantage": 1.0 if i % 2 else -1.0, "reward": i % 2, "promptLength": len(prompt)})
    data = write_v2(seqs, run_id=RUN, step=0, policy_version=0)
    path = os.path.join(a.work, "batch-0.safetensors")
    with open(path, "wb") as f:
        f.write(data)
    import hashlib

    s, body = http("PUT", f"{a.trainer}/v1/runs/{RUN}/steps/0", {"batchUri": path, "batchHash": hashlib.sha256(data).hexdigest(), "policyVersion": 0, "optimizer": {"lr": 1e-5}})
    assert s in (200, 202), body
    s, res = wait_result(a.trainer, RUN, 0, timeout=600)
    assert s == 200 and res.get("state") == "done", res
    drift = res["logprobDrift"]["maxAbs"]
    print(json.dumps({"phase": "step0", "logprobDrift": res["logprobDrift"]}), flush=True)

    # 2. Disk: the checkpoint the step wrote, loaded by SGLang.
    ckpt = res["checkpoint"]["uri"]
    disk_bytes = sum(os.path.getsize(os.path.join(ckpt, n)) for n in os.listdir(ckpt) if n.endswith(".safetensors"))
    write_s = res["stepSeconds"] - res["trainSeconds"]
    t0 = time.perf_counter()
    s, r = http("POST", f"{a.engine}/update_weights_from_disk", {"model_path": ckpt, "weight_version": "1"}, timeout=900)
    assert s == 200 and r.get("success"), r
    load_s = time.perf_counter() - t0
    http("POST", f"{a.engine}/flush_cache", {})
    p_disk = probe(a.trainer, a.engine, 1, vocab)
    print(json.dumps({"phase": "disk", "bytes": disk_bytes, "writeS": write_s, "loadS": load_s, "probe": p_disk}), flush=True)

    # 3. Distributed, bf16 on the wire.
    group = "rstar-gpu-weights"
    with ThreadPoolExecutor(2) as ex:
        t0 = time.perf_counter()
        tj = ex.submit(http, "POST", f"{a.trainer}/v1/weight-sync/group", {"masterAddress": "127.0.0.1", "masterPort": a.master_port, "worldSize": 2, "groupName": group, "backend": a.backend}, 900)
        ej = ex.submit(http, "POST", f"{a.engine}/init_weights_update_group", {"master_address": "127.0.0.1", "master_port": a.master_port, "rank_offset": 1, "world_size": 2, "group_name": group, "backend": a.backend}, 900)
        assert tj.result()[0] == 200, tj.result()
        assert ej.result()[0] == 200 and ej.result()[1].get("success"), ej.result()
        init_s = time.perf_counter() - t0
        pol = {"runId": RUN, "policyVersion": 1, "bucketMB": a.bucket_mb, "dtype": "bfloat16"}
        t0 = time.perf_counter()
        s, plan = http("POST", f"{a.trainer}/v1/weight-sync/plan", pol)
        assert s == 200, plan
        for k, b in enumerate(plan["buckets"]):
            last = k == len(plan["buckets"]) - 1
            send = ex.submit(http, "POST", f"{a.trainer}/v1/weight-sync/buckets/{k}", {**pol, "groupName": group}, 900)
            recv = ex.submit(http, "POST", f"{a.engine}/update_weights_from_distributed", {
                "names": b["names"], "dtypes": b["dtypes"], "shapes": b["shapes"], "group_name": group,
                **({"weight_version": "1", "flush_cache": True} if last else {})}, 900)
            assert send.result()[0] == 200, send.result()
            assert recv.result()[0] == 200 and recv.result()[1].get("success", True), recv.result()
        dist_s = time.perf_counter() - t0
    p_dist = probe(a.trainer, a.engine, 1, vocab)
    print(json.dumps({"phase": "distributed", "backend": a.backend, "bytes": plan["totalBytes"], "buckets": len(plan["buckets"]), "groupInitS": init_s, "syncS": dist_s, "probe": p_dist}), flush=True)

    gb = 1e9
    out = {
        "check": "weights", "parameters": plan["parameters"], "backend": a.backend,
        "disk_s_per_gb": (write_s + load_s) / (disk_bytes / gb), "disk_load_s_per_gb": load_s / (disk_bytes / gb),
        "distributed_s_per_gb": dist_s / (plan["totalBytes"] / gb),
        "probe_disk_max_abs": p_disk["maxAbsDiff"], "probe_distributed_max_abs": p_dist["maxAbsDiff"], "probe_tol": a.probe_tol,
        "step0_drift_max_abs": drift, "drift_max": a.drift_max,
    }
    print(json.dumps(out), flush=True)
    ok = p_disk["maxAbsDiff"] <= a.probe_tol and p_dist["maxAbsDiff"] <= a.probe_tol and drift <= a.drift_max
    if not ok:
        print("weights-check: probe or step-0 drift beyond tolerance", file=sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
