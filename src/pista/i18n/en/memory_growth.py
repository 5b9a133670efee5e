"""memory-growth in English."""

from __future__ import annotations

from pista.rules.memory_growth import Held, MemoryGrowth

TITLE = "Memory grows step after step"


def _mb(b: float) -> str:
    return f"{b / 1e6:,.1f} MB"


def message(r: MemoryGrowth) -> str:
    text = (f"Memory allocated on {r.device} at the end of each of {r.steps} steps rises from {_mb(r.first_bytes)} "
            f"to {_mb(r.last_bytes)}, {_mb(r.growth_bytes_per_step)} more every step")
    if r.steps_to_oom is not None:
        text += f"; the device's {_mb(r.capacity_bytes)} last about {r.steps_to_oom:,.0f} more steps at this rate"
    held = f" Most of what the last step still holds was allocated by {r.top_op}." if r.top_op else ""
    return text + "." + held


def advice(r: MemoryGrowth) -> str:
    return ("Something keeps each step's tensors alive: keep scalars as numbers (loss.item() every N steps) or "
            "detach what you keep (loss.detach()), and clear lists and caches that outlive a step"
            + (f"; start with what holds the outputs of {r.top_op}." if r.top_op else "."))


def fix(r: MemoryGrowth) -> str:
    return (f"{r.device} memory grows {_mb(r.growth_bytes_per_step)} per step"
            + (f" (held from {r.top_op})" if r.top_op else "")
            + ": stop keeping tensors with their graph across steps (loss.detach() or loss.item()).")


def basis(r: MemoryGrowth) -> str:
    return "memory, not time: bytes allocated at each step's end, growing every step (no time saved per step)"


NOTES = {
    Held: lambda n: f"{n.bytes / 1e6:,.1f} MB allocated here in the last step, still held at the end",
}
