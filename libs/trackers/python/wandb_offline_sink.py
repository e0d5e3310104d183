"""rstar's Weights & Biases sink, offline: reads JSON lines on stdin, writes an offline W&B run.

One request per line, one JSON answer per line on stdout ({"ok": true, ...} or {"error": "..."}):
  {"op": "init", "dir": D, "project": P, "name": N, "id": I, "config": {...}}  -> {"ok": true, "runDir": ...}
  {"op": "log", "step": S, "metrics": {...}}
  {"op": "table", "step": S, "columns": [...], "data": [[...], ...]}
  {"op": "finish", "exitCode": 0|1}
The run lands in D/wandb/offline-run-<time>-<id>; `wandb sync <that folder>` uploads it later.
"""
import json
import os
import sys

os.environ["WANDB_MODE"] = "offline"
os.environ.setdefault("WANDB_SILENT", "true")
os.environ.setdefault("WANDB_DISABLE_GIT", "true")


def answer(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def main():
    wandb = None
    run = None
    table_rows = []
    table_cols = None
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            req = json.loads(line)
            op = req["op"]
            if op == "init":
                try:
                    import wandb
                except ImportError as e:
                    answer({"error": f"the wandb package is not installed in {sys.executable} ({e}); pip install wandb there"})
                    return 3
                run = wandb.init(
                    project=req["project"], name=req["name"], id=req["id"], dir=req["dir"], config=req["config"],
                    mode="offline", resume="allow", settings=wandb.Settings(console="off", x_disable_stats=True),
                )
                answer({"ok": True, "runDir": os.path.dirname(run.dir)})
            elif op == "log":
                run.log(req["metrics"], step=req["step"])
                answer({"ok": True})
            elif op == "table":
                table_cols = req["columns"]
                table_rows.extend(req["data"])
                # A W&B table is immutable once logged: log the whole table so far under the step.
                run.log({"rollouts": wandb.Table(columns=table_cols, data=table_rows)}, step=req["step"])
                answer({"ok": True})
            elif op == "finish":
                run.finish(exit_code=req.get("exitCode", 0))
                answer({"ok": True})
                return 0
            else:
                answer({"error": f"unknown op {op!r}"})
        except Exception as e:  # noqa: BLE001 - every failure goes back to the caller as an answer
            answer({"error": f"{type(e).__name__}: {e}"})
    if run is not None:
        run.finish()
    return 0


if __name__ == "__main__":
    sys.exit(main())
