"""Number formats the languages share: durations given in µs, written in µs or ms."""

from __future__ import annotations


def t(us: float) -> str:
    """A duration in µs, written in µs or ms."""
    us = float(us)
    return f"{us / 1000.0:.3f} ms" if abs(us) >= 1000.0 else f"{us:.3f} µs"


def pct(share: float) -> str:
    """A share 0..1 as a percentage with one decimal."""
    return f"{100.0 * float(share):.1f}%"
