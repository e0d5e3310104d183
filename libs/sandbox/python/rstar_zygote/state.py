"""The zygote's one mutable state object: everything that lives from one request to the next."""
import collections

from .cgroups import Cgroups
from .wipe import Wiper


class Zygote:
    """State of one zygote, handed to every function that needs more than its arguments.

    cfg          Config (read-only)
    proto_in/out the protocol fds (private copies of the original fd 0/1)
    cg           open cgroup files and the limits written
    wiper        what the wipe keeps, watches and failed to remove
    sessions     session id -> dict(pid, ctl_w, res_r, out_r, err_r, leaf, slot, uid, workdir, last)
    session_dirs work dirs of live sessions (the shared-dir wipe leaves them alone)
    reset_ids    sessions whose interpreter was lost: their next call says so (bounded, oldest dropped)
    spare        a child forked ahead of the next stateless call (stateless.prefork), or None
    facts        what the ready line reports (versions, heap preparation, namespaces)
    """

    def __init__(self, cfg, proto_in, proto_out):
        self.cfg = cfg
        self.proto_in = proto_in
        self.proto_out = proto_out
        self.cg = Cgroups(cfg.pids_max)
        self.wiper = Wiper(cfg.wipe_dirs, cfg.work_root)
        self.sessions = {}
        self.session_dirs = set()
        self.reset_ids = collections.OrderedDict()
        self.spare = None
        self.facts = {}

    def mark_reset(self, sid):
        self.reset_ids[sid] = True
        while len(self.reset_ids) > 4096:
            self.reset_ids.popitem(last=False)
