"""implicit-copy-before-gemm in English."""

from __future__ import annotations

from pista.i18n._fmt import t
from pista.rules._common import short_name, steps_text
from pista.rules.implicit_copy_before_gemm import Fill, FillCall, FillGroup, GemmAfter, ImplicitCopy

TITLE = "The GEMM library's own memset/copy before each GEMM costs GPU time"


def _group(g: FillGroup) -> str:
    where = f" in {steps_text(list(g.steps))}" if g.steps else ""
    return f"{g.count} x {g.fill} from {g.op} before {short_name(g.gemm)}{where}"


def message(r: ImplicitCopy) -> str:
    return (f"{r.pairs} memset/copy the program did not write ran right before their op's own GEMM kernel: "
            + "; ".join(_group(g) for g in r.groups)
            + (f"; and {r.more_groups} more kind(s)" if r.more_groups else "")
            + f". {t(r.device_us)} on the GPU and {t(r.host_api_us)} of host API calls; the GEMM starts "
            f"{t(r.gap_us_min)}-{t(r.gap_us_max)} after it, already queued in {r.queued} of {r.pairs} cases. "
            f"Without them the GPU would gain {t(r.cost_us / r.steps)} per step, {r.step_share_percent:.1f}% of "
            "the step.")


def advice(r: ImplicitCopy) -> str:
    g = r.groups[0]
    return (f"The GEMM library (cuBLAS, cuDNN) clears its workspace before every {short_name(g.gemm)} call; it "
            "costs time here because the GEMMs are many and short. Batch them into fewer, larger GEMMs (torch.bmm, a larger batch), or capture "
            "the step as a CUDA graph (torch.compile(mode='reduce-overhead')); another layout or dtype may pick a "
            "kernel without the memset.")


def fix(r: ImplicitCopy) -> str:
    g = r.groups[0]
    return (f"{g.op} clears the GEMM library's workspace before each of its {g.count} {short_name(g.gemm)} calls, "
            f"{t(r.cost_us / r.steps)} of GPU time per step: batch the small GEMMs or capture the step as a CUDA "
            "graph.")


def basis(r: ImplicitCopy) -> str:
    return ("the GPU time from each memset's start to its GEMM's start where the GEMM was already queued, the "
            "memset alone where the GPU waited for the host, per step")


NOTES = {
    Fill: lambda n: f"launched inside {n.op}; costs the GPU {t(n.cost_us)}",
    FillCall: lambda n: f"its host API call, {t(n.dur_us)}",
    GemmAfter: lambda n: (f"the GEMM, starts {t(n.gap_us)} after it on the same stream"
                          + (" (already queued)" if n.queued else " (launched after it)")),
}
