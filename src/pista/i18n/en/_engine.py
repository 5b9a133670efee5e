"""The engine's text in English: how a replayed impact was estimated."""

from __future__ import annotations

from pista.i18n._fmt import t
from pista.timeline import EditCounts


def _what(c: EditCounts) -> str:
    parts = []
    if c.removed:
        parts.append(f"{c.removed:,} event(s) removed (ops with what they launched, or kernels and copies)")
    if c.scaled_host:
        parts.append(f"the host time under {c.scaled_host:,} event(s) shortened")
    if c.resized_work:
        parts.append(f"{c.resized_work:,} kernel(s) or copies resized")
    if c.unblocked:
        parts.append(f"{c.unblocked:,} wait(s) dropped")
    if c.readied:
        parts.append(f"{c.readied:,} kernel(s) or copies run once launched, without the wait the trace shows before them")
    return "; ".join(parts) or "no change"


def replay_basis(us: float, alone_us: float | None, unprofiled_us: float | None, unprofiled_share: float | None,
                 counts: EditCounts) -> str:
    alone = ""
    if alone_us is not None and abs(alone_us - us) >= 0.05 * max(us, 1e-9):
        alone = (f" ({t(alone_us)} alone, profiled; part of it is credited to the fixes ranked above it)"
                 if alone_us > us else f" ({t(alone_us)} alone, profiled; more once the fixes above it are made)")
    clean = "" if unprofiled_us is None else "; the figure without the profiler ranks it"
    return f"replay of the profiled steps with the fix applied ({_what(counts)}){alone}{clean}"
