"""gemm-alignment: the arguments of its text (ftl/<lang>/gemm_alignment.ftl)."""

from __future__ import annotations

from pista.i18n._fluent import Say, yes
from pista.i18n._fmt import t
from pista.rules.gemm_alignment import CallNote, GemmAlignment, Misaligned


def _group(m: Misaligned, say: Say) -> str:
    b, mm, n, k = m.mnk
    return say("group-item", op=m.op, batched=yes(b > 1), b=str(b), m=str(mm), n=str(n), k=str(k), dtype=m.dtype,
               calls=str(m.calls), us=t(m.us_per_step), tflops=f"{m.tflops:.0f}", kernel=m.kernel)


def args(r: GemmAlignment, say: Say) -> dict[str, str]:
    d = r.odd[0] if r.odd else None
    return {
        "calls": str(r.calls), "dims": ", ".join(str(x) for x in r.odd[:3]), "kernel_us": t(r.kernel_us),
        "gpu_share": f"{r.gpu_share_percent:.0f}", "reference": f"{r.reference_tflops:.0f}",
        "groups": "; ".join(_group(m, say) for m in r.groups[:3]),
        "dim": str(d) if d is not None else "", "sequence": yes(d is not None and d in r.sequence),
        "pad_to": str(r.pad_to), "gpu_saved_us": t(r.gpu_saved_us), "per": "step" if r.steps > 1 else "window",
        "busy": f"{r.busy_percent:.0f}",
    }


NOTES = {
    CallNote: lambda n, say: {"tflops": f"{n.tflops:.0f}", "reference": f"{n.reference_tflops:.0f}"},
}
