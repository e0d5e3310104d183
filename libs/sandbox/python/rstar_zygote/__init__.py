"""rstar sandbox zygote (run as `python -m rstar_zygote`).

One long-lived interpreter that imports the heavy scientific stack once and then forks one child per
call (docs/design/architecture.md §5, docs/design/sandbox.md: a cold `python3` with numpy+sympy costs ~0.7 s, a fork ~1-5 ms).
It normally runs inside bubblewrap (no network, read-only system, private tmpfs, empty environment).

Modules, one job each (importing any of them does nothing but define names; `__main__` does the work):
  config      the zygote's configuration (from the pool, as JSON in RSTAR_ZYGOTE_CONFIG)
  state       the one mutable state object (`Zygote`) every other module is handed
  warmup      imports, warm-up calls, immortal heap, huge pages: what every child inherits
  frames      the byte protocol with the pool (requests in, responses out)
  callmem     anonymous mappings that hold a call's bytes off the heap
  cgroups     cgroup leaves: limits, counters, killing a call's tasks
  isolation   what a fresh child does before user code: cgroup, namespaces, fds, uid, rlimits
  cell        running a program like `python3 prog.py` (or a Jupyter cell) and how it exits
  capture     reading a program's output under the caps; the session result pipe
  status      classifying how a program ended
  wipe        removing what a call left in its work dir and the shared temp dirs
  stateless   one call in a pre-forked child
  sessions    one live interpreter per session id
  forksafety  the invariants every fork relies on, in one place
"""
