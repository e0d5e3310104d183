"""JSON text exactly as JavaScript's ``JSON.stringify`` writes it, for hashes shared with TypeScript.

The v1 batch hash (libs/grpo ``buildTrainingBatch``) is the sha256 of ``JSON.stringify`` over the
sequences; to check it here, numbers must be written the way ECMAScript's ``Number::toString`` does
(ECMA-262 §6.1.6.1.20): the shortest round-trip digits (which Python's ``repr`` also gives), then
plain notation for decimal exponents in [-6, 21) and ``1e+21`` / ``1.5e-7`` style outside it.
"""

from __future__ import annotations

import json
import math
import re

_REPR = re.compile(r"^(\d+)(?:\.(\d*))?(?:e([+-]?\d+))?$")


def js_number(x: float | int | bool) -> str:
    """Format a number as ``JSON.stringify`` does: integers plainly, floats by ``Number::toString``,
    ``NaN``/``±Infinity`` as ``null``, ``-0`` as ``0``."""
    if isinstance(x, bool):
        return "true" if x else "false"
    if isinstance(x, int):
        if abs(x) < 2**53:
            return str(x)
        x = float(x)
    if not math.isfinite(x):
        return "null"
    if x == 0:
        return "0"
    sign = "-" if x < 0 else ""
    m = _REPR.match(repr(abs(x)))
    if m is None:  # pragma: no cover - repr of a finite positive float always matches
        raise ValueError(f"cannot format {x!r}")
    int_part, frac_part, exp = m.group(1), m.group(2) or "", int(m.group(3) or 0)
    digits = int_part + frac_part
    n = len(int_part) + exp  # value = 0.digits * 10^n
    stripped = digits.lstrip("0")
    n -= len(digits) - len(stripped)
    digits = stripped.rstrip("0")
    k = len(digits)
    if k <= n <= 21:
        return sign + digits + "0" * (n - k)
    if 0 < n <= 21:
        return sign + digits[:n] + "." + digits[n:]
    if -6 < n <= 0:
        return sign + "0." + "0" * (-n) + digits
    e = n - 1
    es = f"e+{e}" if e >= 0 else f"e-{-e}"
    if k == 1:
        return sign + digits + es
    return sign + digits[0] + "." + digits[1:] + es


def js_stringify(value) -> str:
    """``JSON.stringify(value)`` (no spacing) for None, bools, numbers, strings, lists and dicts
    (insertion order, as JavaScript keeps it for string keys)."""
    if value is None:
        return "null"
    if isinstance(value, (bool, int, float)):
        return js_number(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(js_stringify(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ",".join(json.dumps(str(k), ensure_ascii=False) + ":" + js_stringify(v) for k, v in value.items()) + "}"
    tolist = getattr(value, "tolist", None)
    if tolist is not None:
        return js_stringify(tolist())
    raise TypeError(f"cannot stringify {type(value).__name__}")
