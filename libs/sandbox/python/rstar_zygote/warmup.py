"""The zygote's heap before its first fork: what every child inherits copy-on-write.

Every preloaded module makes each fork and exit slower (its mappings and page tables are copied and torn
down per call), so only what real tool calls use is imported, and the heap is then prepared so a child
copies as few pages as possible (immortal objects, frozen GC, huge pages)."""
import ctypes
import errno
import gc
import importlib
import os
import sys

from .isolation import libc

# Standard-library and scientific modules every call may use without paying their import.
BASE_MODULES = ("math", "fractions", "itertools", "collections", "functools", "re", "random", "decimal",
                "statistics", "numpy", "sympy", "scipy")
# scipy's submodules load lazily (`import scipy` alone gives none of them) and cost 1-2 s cold. These
# are the ones the code blocks of ../shared/trajectories use (libs/sandbox/src/scipy.usage.ts; README
# "scipy submodules"). The pool passes the list explicitly, to its scipy zygotes only: this default
# serves a zygote started by hand.
DEFAULT_WARM_MODULES = ("scipy.stats", "scipy.integrate")
MADV_COLLAPSE = 25  # Linux >= 6.1


def import_stack(extra):
    """Import BASE_MODULES and then `extra` (dotted names); a missing optional module is skipped.
    Returns the names imported."""
    os.environ.setdefault("MPLBACKEND", "Agg")  # plots stay headless
    done = []
    for name in (*BASE_MODULES, *extra):
        try:
            importlib.import_module(name)
            done.append(name)
        except ImportError:
            if name in ("numpy", "sympy", "scipy"):
                raise
    return done


def warm_up():
    """Run what tool calls typically run once, so sympy's lazily imported solvers/printers and caches
    are initialised here and inherited by every child (a cold `solve` in a fresh fork costs ~4x)."""
    import numpy
    import sympy
    x, y = sympy.symbols("x y")
    sympy.solve(x**2 - 5*x + 6, x)
    sympy.solve([x + y - 3, x - y - 1], [x, y])
    str(sympy.solve(x**2 + 1, x))
    sympy.simplify(sympy.sin(x)**2 + sympy.cos(x)**2)
    sympy.factor(x**3 - 1)
    sympy.expand((x + 1)**5)
    sympy.integrate(x**2, (x, 0, 1))
    sympy.limit(sympy.sin(x) / x, x, 0)
    sympy.diff(sympy.exp(x) * x, x)
    sympy.series(sympy.exp(x), x, 0, 3)
    sympy.nsimplify(0.5)
    sympy.N(sympy.pi, 20)
    str(sympy.Rational(1, 3) + sympy.sqrt(8))
    sympy.Matrix([[1, 2], [3, 4]]).det()
    sympy.latex(x**2)
    sympy.factorint(360)
    sympy.isprime(97)
    sympy.binomial(10, 3)
    a = numpy.arange(6.0).reshape(2, 3)
    repr(a @ a.T)
    numpy.linalg.solve(numpy.eye(2), numpy.ones(2))
    repr(numpy.float64(0.5))
    stats = sys.modules.get("scipy.stats")
    if stats is not None:  # a scipy zygote: first calls of the common distributions build their docs/caches
        stats.norm.cdf(1.0)
        stats.binom.pmf(3, 10, 0.5)
        stats.t.ppf(0.975, 10)
    integrate = sys.modules.get("scipy.integrate")
    if integrate is not None:
        integrate.quad(lambda t: t * t, 0, 1)


def immortalize_heap():
    """Mark every object alive now immortal (PEP 683, CPython >= 3.12), best effort.

    Why: after a fork, every `Py_INCREF`/`Py_DECREF` of an inherited object writes its refcount and
    so copies its 4 KiB page into the child; a sympy solve touches ~1,300 such pages (~4 ms of
    copy-on-write faults per call, measured here). Refcount operations skip immortal objects, so
    the child only copies pages it really writes (~750 for that solve). PEP 683 gives this pre-fork
    use (a forking server's shared heap) as its motivation. Objects alive now are the imported stack
    and its warmed caches, which live as long as the zygote anyway; the cost is that those the zygote
    would free later (an evicted cache entry) stay allocated. Returns the count, 0 where refcounts
    have no immortal bit (< 3.12) or the layout is not the one PEP 683 defines."""
    if sys.version_info < (3, 12) or sys.implementation.name != "cpython" or ctypes.sizeof(ctypes.c_void_p) != 8:
        return 0
    if hasattr(sys, "_is_gil_enabled") and not sys._is_gil_enabled():
        return 0  # free-threaded builds keep refcounts elsewhere
    # The low 32 bits of ob_refcnt (little-endian: the first word) all set = immortal, on 64-bit builds.
    if sys.byteorder != "little":
        return 0
    immortal = 0xFFFFFFFF
    seen = set()
    n = 0
    for o in gc.get_objects():
        for x in (o, *gc.get_referents(o)):
            if id(x) in seen:
                continue
            seen.add(id(x))
            ctypes.c_uint32.from_address(id(x)).value = immortal
            n += 1
    return n


def collapse_heap():
    """Back the warmed heap with transparent huge pages (MADV_COLLAPSE, synchronous), best effort.

    Why: a fork copies one page-table entry per resident 4 KiB page and the child's exit tears them
    all down again; with ~60 MiB of imported heap that was the largest per-call CPU cost (~2 ms each
    side, measured with perf: `copy_page_range`). A PMD-mapped 2 MiB page is copied as one entry.
    Copy-on-write still copies 4 KiB (the kernel splits a shared huge page on write), so what a call
    writes is charged to its own memory cgroup exactly as before. No MADV_HUGEPAGE is set, so pages
    the calls allocate stay ordinary 4 KiB pages. Returns the number of 2 MiB ranges collapsed."""
    if not sys.platform.startswith("linux"):
        return 0
    c = libc()
    c.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    huge = 1 << 21
    done = 0
    try:
        with open("/proc/self/maps") as f:
            maps = f.read().splitlines()
    except OSError:
        return 0
    for line in maps:
        parts = line.split()
        perms = parts[1]
        path = parts[5] if len(parts) > 5 else ""
        # Private writable anonymous memory only: the Python heap, pymalloc arenas, numpy buffers.
        if perms[:2] != "rw" or perms[3] != "p" or (path and path != "[heap]"):
            continue
        lo, hi = (int(x, 16) for x in parts[0].split("-"))
        start = (lo + huge - 1) & ~(huge - 1)
        for addr in range(start, hi & ~(huge - 1), huge):
            if c.madvise(addr, huge, MADV_COLLAPSE) == 0:
                done += 1
            elif ctypes.get_errno() in (errno.ENOSYS,):
                return done
    return done


def prepare_heap(cfg):
    """Import, warm, collect, make immortal, freeze and collapse, in that order (each step works on what
    the one before left). Returns facts for the ready line."""
    sys.set_int_max_str_digits(cfg.int_max_str_digits)
    warm = DEFAULT_WARM_MODULES if cfg.warm_modules is None else tuple(cfg.warm_modules)
    imported = import_stack(warm)
    try:
        warm_up()
    except Exception:  # a warm-up failure only costs speed
        pass
    gc.collect()
    immortalized = immortalize_heap() if cfg.immortalize else 0
    gc.freeze()  # children's collections skip inherited objects instead of copying their pages
    huge = collapse_heap() if cfg.huge_pages else 0
    return {"immortalized": immortalized, "hugeRanges": huge,
            "warmModules": [m for m in imported if m not in BASE_MODULES]}
