"""The "Did you mean" hints of CPython 3.12's own exception display, for the traceback module's text.

A program's uncaught exception is printed through the traceback module (see cell.display), but on
CPython 3.12 `python3 prog.py` prints it with the C implementation (Python/suggestions.c), whose hints
differ from the traceback module's in three ways:
- its best-distance bound starts unbounded, while the module starts it at the wrong name's length, so
  short names get no hint from the module (`d` -> `id`, `mx` -> `max`, `ln` -> `len`);
- a NameError is looked up in the frame's variable names, then its globals, then its builtins, each a
  separate search (the first with a match wins); the module searches the three joined;
- the stdlib import hint ends in a question mark (3.12.1's module leaves it out).
From 3.13 on both paths are the module's, so nothing is changed there.
"""
import sys
import traceback

_ACTIVE = sys.version_info[:2] == (3, 12) and hasattr(traceback, "_levenshtein_distance")
# Python/suggestions.c: a namespace this large is not searched; names longer than this never match.
_MAX_CANDIDATE_ITEMS = 750
_MAX_STRING_SIZE = 40
_MOVE_COST = 2


def _closest(candidates, name):
    """suggestions.c calculate_suggestions: the candidate within a third of the characters of `name`
    with the least edit distance (the first one on a tie), or None."""
    if len(candidates) >= _MAX_CANDIDATE_ITEMS:
        return None
    best, best_distance = None, sys.maxsize
    for item in candidates:
        if not isinstance(item, str) or item == name:
            continue
        max_distance = min((len(name) + len(item) + 3) * _MOVE_COST // 6, best_distance - 1)
        distance = traceback._levenshtein_distance(name, item, max_distance)
        if distance > max_distance:
            continue
        if best is None or distance < best_distance:
            best, best_distance = item, distance
    return best


def _last_frame(tb):
    while tb.tb_next is not None:
        tb = tb.tb_next
    return tb.tb_frame


def _for_name_error(exc, name):
    tb = exc.__traceback__
    if tb is None:
        return None
    frame = _last_frame(tb)
    varnames = list(frame.f_code.co_varnames)
    if "self" in varnames and "self" in frame.f_locals:
        try:
            if hasattr(frame.f_locals["self"], name):
                return f"self.{name}"
        except Exception:
            return None
    for space in (varnames, list(frame.f_globals), list(frame.f_builtins)):
        found = _closest(space, name)
        if found is not None:
            return found
    return None


def c_suggestion(exc):
    """The name CPython 3.12's C display suggests for `exc` (NameError, AttributeError, or an ImportError
    of `from m import name`), or None. `exc.__traceback__` must be the traceback being displayed."""
    try:
        if type(exc) is NameError or type(exc) is UnboundLocalError:
            name = getattr(exc, "name", None)
            return _for_name_error(exc, name) if isinstance(name, str) else None
        if isinstance(exc, AttributeError):
            name, obj = getattr(exc, "name", None), getattr(exc, "obj", None)
            if not isinstance(name, str) or obj is None:
                return None
            return _closest(dir(obj), name)
        if isinstance(exc, ImportError):
            name = getattr(exc, "name_from", None)
            module = sys.modules.get(exc.name) if isinstance(exc.name, str) else None
            if not isinstance(name, str) or module is None:
                return None
            return _closest(dir(module), name)
    except Exception:  # a hint is never worth a failure in the display itself
        return None
    return None


def hint(exc):
    """The text CPython 3.12 appends to the exception's message: `. Did you mean: 'x'?`, the stdlib
    import hint of a NameError, both, or ''."""
    suggestion = c_suggestion(exc)
    text = f". Did you mean: '{suggestion}'?" if suggestion else ""
    name = getattr(exc, "name", None) if isinstance(exc, NameError) else None
    if isinstance(name, str) and name in sys.stdlib_module_names:
        text += f" Or did you forget to import '{name}'?" if suggestion else f". Did you forget to import '{name}'?"
    return text


def _apply(te, exc, seen):
    if te is None or exc is None or id(te) in seen:
        return
    seen.add(id(te))
    if isinstance(exc, (NameError, AttributeError, ImportError)) and hasattr(te, "_str"):
        te._str = traceback._safe_string(exc, "exception") + hint(exc)
    _apply(te.__cause__, exc.__cause__, seen)
    _apply(te.__context__, exc.__context__, seen)
    for sub_te, sub in zip(te.exceptions or (), getattr(exc, "exceptions", ()) or ()):
        _apply(sub_te, sub, seen)


def with_c_hints(te, exc):
    """Rewrite the messages of `te` (a traceback.TracebackException of `exc`) and of its chained and
    grouped exceptions to carry the hints CPython 3.12's C display prints. No-op on other versions."""
    if _ACTIVE:
        _apply(te, exc, set())
    return te
