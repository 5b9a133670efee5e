"""python-loop: the arguments of its text (ftl/<lang>/python_loop.ftl)."""

from __future__ import annotations

from pista.i18n._fluent import Say, key, yes
from pista.i18n._fmt import t
from pista.rules.python_loop import Pass, PythonLoop

# the ops of a pass named, at most
BLOCK_NAMES = 6


def _block(r: PythonLoop) -> str:
    names = list(dict.fromkeys(r.block))
    return ", ".join(names[:BLOCK_NAMES]) + (", ..." if len(names) > BLOCK_NAMES else "")


# What a per-sample pass does, for the batched call's example: a loss (its reduction='none' form), or a read-back of
# one element to the host (the record's reads_back) (review 6: gp_d2h_sync_final sums a tensor one `.cpu()` at a time; told cross_entropy's
# example), else the op on the whole batch.
LOSS_OPS = frozenset({"aten::cross_entropy_loss", "aten::nll_loss", "aten::nll_loss_nd", "aten::mse_loss",
                      "aten::l1_loss", "aten::smooth_l1_loss", "aten::huber_loss", "aten::binary_cross_entropy",
                      "aten::binary_cross_entropy_with_logits", "aten::kl_div"})


def _example(r: PythonLoop) -> str:
    if set(r.block) & LOSS_OPS:
        return "loss"
    return "readback" if r.reads_back else "other"


def _others(r: PythonLoop) -> int:
    """The loops a step holds besides the one told (the record counts them over the window)."""
    return max(round(r.loops / max(r.steps, 1)) - 1, 0)


def args(r: PythonLoop, say: Say) -> dict[str, str]:
    return {
        "example": _example(r), "others": str(_others(r)), "has_others": yes(_others(r)),
        "kind": key(r.kind), "ops": str(len(r.block)), "block": _block(r), "passes": str(r.passes),
        "source": r.source, "has_source": yes(r.source), "host_us": t(r.host_us),
    }


NOTES = {
    Pass: lambda n, say: {"index": str(n.index), "ops": str(n.ops)},
}
