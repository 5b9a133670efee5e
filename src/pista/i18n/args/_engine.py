"""The engine's text (pista.engine, a replayed finding's basis): the arguments of ftl/<lang>/_engine.ftl."""

from __future__ import annotations

from pista.i18n._fluent import Say, yes
from pista.i18n._fmt import t_or_blank
from pista.timeline import EditCounts

# A fix's saving alone, as profiled, differing from its ranked saving by this share of it is said (the
# engine credits each µs once, in rank order: pista.engine)
ALONE_DIFFERS = 0.05

# EditCounts' fields, in the order the basis names them, and their -item messages
COUNTS = (("removed", "removed-item"), ("scaled_host", "scaled-host-item"), ("resized_work", "resized-work-item"),
          ("unblocked", "unblocked-item"), ("readied", "readied-item"))


def args(us: float, alone_us: float | None, unprofiled_us: float | None, counts: EditCounts,
         say: Say) -> dict[str, str]:
    parts = [say(msg, count=f"{n:,}") for field, msg in COUNTS if (n := getattr(counts, field))]
    alone = "same"
    if alone_us is not None and abs(alone_us - us) >= ALONE_DIFFERS * max(us, 1e-9):
        alone = "more" if alone_us > us else "less"
    return {"what": "; ".join(parts) or say("no-change"), "alone": alone,
            "alone_us": t_or_blank(alone_us), "unprofiled": yes(unprofiled_us is not None)}
