"""compute-bound: the arguments of its text (ftl/<lang>/compute_bound.ftl), for either record: ComputeBound (the
GEMMs' headroom) or NearPeak (the GEMMs near the ceiling, another kind of work the larger cost)."""

from __future__ import annotations

from pista.i18n._fluent import Say, key, yes
from pista.i18n._fmt import pct, t
from pista.rules._common import short_name
from pista.rules.compute_bound import ComputeBound, GemmKernel, NearPeak, SlowCall


def _kernel(k: GemmKernel, say: Say) -> str:
    return say("kernel-item", name=short_name(k.name), calls=str(k.calls), total_us=t(k.total_us),
               tflops=f"{k.tflops:.0f}", dtype=k.dtype, share=pct(k.ceiling_share), ceiling=f"{k.ceiling_tflops:.0f}")


def _span(r: NearPeak) -> str:
    shares = sorted(k.ceiling_share for k in r.kernels)
    if not shares:
        return ""
    low, high = pct(shares[0]), pct(shares[-1])
    return low if low == high else f"{low}-{high}"


def _near(r: NearPeak) -> dict[str, str]:
    return {
        "kind": "near", "gemm_step_us": t(r.gemm_us / r.steps), "gemm_percent": f"{r.gemm_percent:.0f}",
        "span": _span(r), "other": key(r.other), "other_us": t(r.other_us), "other_percent": f"{r.other_percent:.0f}",
        "named": yes(r.named_by), "named_by": ", ".join(r.named_by),
    }


def _headroom(r: ComputeBound) -> dict[str, str]:
    out = {"kind": "headroom", "self_device_us": t(r.self_device_total_us), "self_cpu_us": t(r.self_cpu_total_us),
           "gemm_us": t(r.gemm_us), "headroom_step_us": t(r.headroom_us / r.steps)}
    if r.kernels:
        k = r.kernels[0]
        out |= {"top": short_name(k.name), "top_share": pct(k.ceiling_share), "top_dtype": k.dtype,
                "top_tflops": f"{k.tflops:.0f}", "top_ceiling": f"{k.ceiling_tflops:.0f}",
                "top_headroom_us": t(k.headroom_us / r.steps)}
    return out


KEYS = ("gemm_step_us", "gemm_percent", "span", "other", "other_us", "other_percent", "named", "named_by",
        "self_device_us", "self_cpu_us", "gemm_us", "headroom_step_us", "top", "top_share", "top_dtype", "top_tflops",
        "top_ceiling", "top_headroom_us")


def args(r: ComputeBound | NearPeak, say: Say) -> dict[str, str]:
    out = dict.fromkeys(KEYS, "")
    out |= {"busy": f"{r.gpu_busy_percent:.1f}", "card": r.card, "measured": yes(r.ceiling_measured),
            "kernels": "; ".join(_kernel(k, say) for k in r.kernels)}
    return out | (_near(r) if isinstance(r, NearPeak) else _headroom(r))


NOTES = {
    SlowCall: lambda n, say: {"tflops": f"{n.tflops:.0f}", "ceiling": f"{n.ceiling_tflops:.0f}",
                              "headroom_us": t(n.headroom_us)},
}
