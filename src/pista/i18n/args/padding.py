"""padding: the arguments of its text (ftl/<lang>/padding.ftl)."""

from __future__ import annotations

from pista.i18n._fluent import Say, yes
from pista.i18n._fmt import t
from pista.rules.padding import MaskedAttention, PadCall, Padding


def args(r: Padding, say: Say) -> dict[str, str]:
    return {
        "seen": yes(r.seen), "compiled": yes(r.compiled), "length": str(r.length), "longest": f"{r.longest:.0f}",
        "batch": str(r.batch), "padded": f"{100 * (1 - r.longest / r.length):.0f}" if r.length else "",
        "kernels_us": t(r.kernels_us), "saved_us": t(r.saved_gpu_us), "ratio": f"{100 * r.ratio:.0f}",
    }


NOTES = {
    PadCall: lambda n, say: {"rows": str(n.rows), "longest": str(n.longest), "padded_to": str(n.padded_to)},
    MaskedAttention: lambda n, say: {"mask": str(list(n.mask))},
}
