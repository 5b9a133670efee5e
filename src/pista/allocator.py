"""The C allocator's knobs, for pista's own process (the command line): a big trace's arrays are
freed by the hundred while it is analysed, and glibc keeps their pages unless told otherwise. In a
user's process (pista.profile, a notebook) the allocator is theirs: nothing here runs there."""

from __future__ import annotations

import ctypes
import functools
from typing import Any

# glibc's mallopt options: the size from which an allocation gets its own mapping, handed back to
# the system when freed, and how much free memory the heap's top may keep. Left alone, glibc raises
# the first to the biggest block freed so far (up to 32 MiB): a big trace's full-length arrays then
# come from the heap, where the pages of the freed ones stay resident. 4 MiB maps the arrays of a
# trace past ~500 k events and none of a smaller one's; the heap's top keeps twice that, as glibc
# would. 1 GB copy of big_gpt_eager_20steps, tree PSS: 664 MiB left alone, 626 with these (bench.py,
# 2026-12-04); the 64 MB trace's time unchanged.
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
MMAP_THRESHOLD_BYTES = 4 << 20
# From this many rows a phase's freed arrays are handed back when it ends: the trace's int64 columns
# are mapped on their own from here, but its bool masks and int32 subsets (1-4 bytes a row) still
# come from the heap, and their holes stay resident. 1 GB copy of big_gpt_eager_20steps: 75 MiB
# after derive alone, tree PSS peak 532 -> 461 MiB with a trim after each phase and rule (70 ms of
# 17 s); below this the holes are a few MiB and the trims ~1% of the time.
TRIM_MIN_ROWS = MMAP_THRESHOLD_BYTES // 8

_tuned = False  # map_big_arrays ran: this is pista's own process


@functools.cache
def _libc_function(name: str) -> Any:
    try:
        return getattr(ctypes.CDLL(None), name)  # glibc's; other C libraries have none
    except (OSError, AttributeError, TypeError):  # TypeError: Windows loads no library by None
        return None


def map_big_arrays() -> None:
    """Give every allocation of MMAP_THRESHOLD_BYTES or more its own mapping, for the rest of the
    process. For the command line only: in a user's process (pista.profile) the allocator is theirs."""
    global _tuned
    mallopt = _libc_function("mallopt")
    if mallopt is None:
        return
    mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES)
    mallopt(_M_TRIM_THRESHOLD, 2 * MMAP_THRESHOLD_BYTES)
    _tuned = True


def give_back_freed_memory() -> None:
    """Hand the pages of freed arrays back to the system now: they lie between live allocations,
    where glibc keeps them (on a 1 GB trace's read: 200 MiB, as much as the trace's columns)."""
    trim = _libc_function("malloc_trim")
    if trim is not None:
        trim(0)


def phase_done(rows: int) -> None:
    """A phase of the analysis of a trace of `rows` rows has ended (derive, the table, a rule):
    in pista's own process, past TRIM_MIN_ROWS, its freed arrays' pages go back to the system."""
    if _tuned and rows >= TRIM_MIN_ROWS:
        give_back_freed_memory()
