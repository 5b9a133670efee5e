"""Number formats the languages share: durations given in µs, written in ns, µs, ms or s.

Two styles. The precise one (three decimals, µs or ms) is what the JSON and the library's
`Finding.message` give: the JSON is a contract and scripts compare its text. What people read (the
terminal, the HTML page, Markdown) asks for `short_figures()`: three significant digits, each unit
spelled one way, since "137674.662 µs" is read as "138 ms" anyway.
"""

from __future__ import annotations

import contextlib
import contextvars
import math
from collections.abc import Iterator

_SHORT = contextvars.ContextVar("pista_short_figures", default=False)


@contextlib.contextmanager
def short_figures(on: bool = True) -> Iterator[None]:
    """Within it, t() and num() write three significant digits (a renderer for people wraps its body)."""
    token = _SHORT.set(on)
    try:
        yield
    finally:
        _SHORT.reset(token)


def is_short() -> bool:
    return _SHORT.get()


def sig3(value: float) -> str:
    """`value` with three significant digits and no exponent: 41.3, 138, 0.0413, 137675 (digits
    before the point are never dropped)."""
    value = float(value)
    if value != value or value in (float("inf"), float("-inf")):
        return str(value)
    rounded = float(f"{value:.3g}")  # 99.96 -> 100, so the decimals below follow the rounded magnitude
    size = abs(rounded)
    if size == 0:
        return "0"
    if size >= 100:
        return f"{value:.0f}"
    decimals = 1 if size >= 10 else 2 if size >= 1 else 2 - _exponent(size)
    return f"{rounded:.{decimals}f}"


def _exponent(size: float) -> int:
    """The power of ten of a number under 1 (0.0413 -> -2)."""
    return math.floor(math.log10(size))


def t(us: float) -> str:
    """A duration in µs: in µs or ms with three decimals, or with short_figures() in ns, µs, ms or s
    with three significant digits."""
    us = float(us)
    if _SHORT.get():
        return _short_time(us)
    return f"{us / 1000.0:.3f} ms" if abs(us) >= 1000.0 else f"{us:.3f} µs"


def t_or_blank(us: float | None) -> str:
    """t(us), or "" for a duration the trace does not give."""
    return "" if us is None else t(us)


# (unit, µs in one) from the largest: a duration is written in the first unit it reaches one of.
_UNITS = (("s", 1e6), ("ms", 1e3), ("µs", 1.0), ("ns", 1e-3))


def _short_time(us: float) -> str:
    size = abs(float(f"{us:.3g}"))  # 999.96 µs rounds to 1000: written as 1.00 ms
    if size == 0:
        return "0 µs"
    for unit, scale in _UNITS:
        if size >= scale:
            return f"{sig3(us / scale)} {unit}"
    return f"{sig3(us * 1e3)} ns"


def num(value: float, decimals: int = 3) -> str:
    """A figure that is not a duration (GFLOP, MB, a share's percentage): `decimals` decimals, or three
    significant digits with short_figures()."""
    return sig3(value) if _SHORT.get() else f"{float(value):.{decimals}f}"


def pct(share: float) -> str:
    """A share 0..1 as a percentage with one decimal (three significant digits with short_figures())."""
    return f"{num(100.0 * float(share), 1)}%"
