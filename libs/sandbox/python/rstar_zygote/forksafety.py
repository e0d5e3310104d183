"""The invariants every fork of the zygote relies on, in one place.

A child of the zygote starts as a copy of it: its heap, its fds, its Python objects, the frame that
forked it. User code then runs in that copy with the rights of an unprivileged uid, so anything of
another call that the copy still holds is readable by it. Each invariant below says what is kept out of
children and where that is enforced; `forget_zygote_state` is the one step children run for it here.

1. No byte of a call's program, stdin, output or file names on the zygote's heap (freed memory is
   inherited): they live only in call mappings, private and MADV_DONTFORK (callmem.call_map), and file
   names are listed only in a short-lived forked helper (wipe.Wiper.in_helper).
2. No request in a frame a spare child can walk up to (`sys._getframe().f_back`): a request is handled in
   `__main__.answer`, whose frame is gone before the main loop forks the next spare, and the loop drops its
   own reference first (`__main__.serve`).
3. No zygote bookkeeping in a child: session ids, pids, work dirs and the spare are forgotten before any
   program runs (`forget_zygote_state`, below).
4. No inherited fd but the child's own: stdout/stderr become its pipes and every other fd is closed
   (isolation.isolate_fds), so the protocol channel, cgroup files and other sessions' pipes are out of
   reach; the zygote's own fds are O_CLOEXEC besides.
5. The cgroup before the uid: a child joins its call's leaf first thing after the fork, as root, with raw
   writes to fds opened before the fork (isolation.join_cgroup), and only then drops to the call uid
   (isolation.drop_privileges), so user code can neither leave its cgroup nor signal the zygote.
6. Death with the zygote: PR_SET_PDEATHSIG is set after the uid change (which clears it).
7. Inherited objects are not written: the heap is made immortal and frozen before the first fork
   (warmup.prepare_heap), so a child's reference counting and GC copy no inherited page.
8. A spare waits as root: the call uid is taken only once the job is there, so a waiting spare is never a
   process of the call uid that a running call could signal or trace (stateless.prefork).
"""


def forget_zygote_state(z):
    """In a fresh child, before any program runs: drop what the zygote knows of other calls and
    sessions (ids, pids, work dirs, the spare), which the child inherited and has no use for."""
    z.sessions.clear()
    z.session_dirs.clear()
    z.reset_ids.clear()
    z.spare = None
