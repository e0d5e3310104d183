"""The zygote's configuration: what the pool decides (work root, uids, cgroup leaves, limits), passed
as one JSON object in the environment variable RSTAR_ZYGOTE_CONFIG."""
import json
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Config:
    """Every setting of one zygote. Leaves are dicts {"memory": dir|None, "pids": dir|None, "version":
    1|2}; the cgroups module caches the limits it last wrote in them (key `_applied`)."""

    work_root: str = "/tmp/rstar-zygote"
    # Unprivileged uid of stateless calls; None: stay as we are (no privilege to drop).
    call_uid: int | None = None
    # One uid per session slot, none shared with stateless calls or other slots: a session's leftover
    # thread can then neither signal, read nor write what another call or session owns.
    session_uids: list = field(default_factory=list)
    cg_call: dict | None = None
    cg_sessions: list = field(default_factory=list)  # one leaf per session slot
    session_cap: int = 4
    session_idle_s: float = 300.0
    # Grace a timed-out session cell gets to stop after its KeyboardInterrupt before the interpreter
    # is killed (and the session reset).
    interrupt_grace_s: float = 2.0
    wipe_dirs: list = field(default_factory=list)  # shared temp dirs wiped after each call (sandbox only)
    pids_max: int = 64
    file_max: int = 64 << 20
    nofile: int = 256
    immortalize: bool = True
    huge_pages: bool = True
    prefork: bool = True
    int_max_str_digits: int = 0
    # Submodules imported into the zygote's heap before forking (None: warmup's default list).
    warm_modules: list | None = None


def config_from_env(environ):
    """The Config in `environ` (RSTAR_ZYGOTE_CONFIG, removed so no program sees it, like
    RSTAR_CG_PROCS of the launching shell). Missing keys take the defaults above.
    @raises ValueError on a malformed JSON value"""
    raw = json.loads(environ.pop("RSTAR_ZYGOTE_CONFIG", "{}") or "{}")
    environ.pop("RSTAR_CG_PROCS", None)
    c = Config()
    return Config(
        work_root=raw.get("workRoot", c.work_root),
        call_uid=raw.get("uid"),
        session_uids=list(raw.get("sessionUids") or []),
        cg_call=raw.get("cgCall"),
        cg_sessions=list(raw.get("cgSessions") or []),
        session_cap=int(raw.get("sessionCap", c.session_cap)),
        session_idle_s=float(raw.get("sessionIdleS", c.session_idle_s)),
        interrupt_grace_s=float(raw.get("interruptGraceS", c.interrupt_grace_s)),
        wipe_dirs=list(raw.get("wipeDirs") or []),
        pids_max=int(raw.get("pidsMax", c.pids_max)),
        file_max=int(raw.get("fileMaxBytes", c.file_max)),
        nofile=int(raw.get("openFiles", c.nofile)),
        immortalize=bool(raw.get("immortalize", True)),
        huge_pages=bool(raw.get("hugePages", True)),
        prefork=bool(raw.get("prefork", True)),
        int_max_str_digits=int(raw.get("intMaxStrDigits", 0)),
        warm_modules=raw.get("warmModules"),
    )
