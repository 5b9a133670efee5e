"""dominant-event: the arguments of its text (ftl/<lang>/dominant_event.ftl)."""

from __future__ import annotations

from pista.efficiency import Rate
from pista.i18n._fluent import Say, key, yes
from pista.i18n._fmt import num, pct, t
from pista.rules._common import short_name
from pista.rules.dominant_event import (
    IDLE_NAMED_BELOW,
    SMALL_GEMM_FLOPS,
    TILE_MULTIPLE,
    DominantEvent,
    Instance,
)


def _f0(x: float | None) -> str:
    return "" if x is None else f"{x:.0f}"


def _below(r: DominantEvent, g: Rate) -> str:
    """Why a GEMM below the ceiling is slow: its tiles, its size, or neither (autotune)."""
    if r.shape and any(d % TILE_MULTIPLE for d in r.shape[1:]):
        return "tiles"
    return "small" if g.flops / max(g.rated_calls, 1) < SMALL_GEMM_FLOPS else "autotune"


def _lower(r: DominantEvent, g: Rate) -> str:
    """The lower precision to suggest at the ceiling, if any."""
    if g.dtype in ("bf16", "fp16") and r.fp8:
        return "fp8"
    return "bf16" if g.dtype == "tf32" else "none"


def _rate(r: DominantEvent) -> dict[str, str]:
    g = r.rate
    if g is None:
        return {"has_rate": "no", "gflop": "", "tflops": "", "tflops1": "", "has_peak": "no", "peak_share": "",
                "peak_tflops": "", "has_ceiling": "no", "ceiling_share": "", "ceiling_tflops": "", "card": "",
                "measured": "no", "dtype": "", "has_dtype": "no", "below": "autotune", "lower": "none",
                "precision": "fp64"}
    return {
        "has_rate": yes(g.tflops is not None), "gflop": f"{g.flops / max(g.rated_calls, 1) / 1e9:.1f}",
        "tflops": _f0(g.tflops), "tflops1": "" if g.tflops is None else f"{g.tflops:.1f}",
        "has_peak": yes(g.peak_tflops), "peak_share": "" if g.peak_share is None else pct(g.peak_share),
        "peak_tflops": _f0(g.peak_tflops),
        "has_ceiling": yes(g.ceiling_tflops), "ceiling_share": "" if g.ceiling_share is None else pct(g.ceiling_share),
        "ceiling_tflops": _f0(g.ceiling_tflops), "card": str(g.card), "measured": yes(g.ceiling_measured),
        "dtype": str(g.dtype), "has_dtype": yes(g.dtype), "below": _below(r, g), "lower": _lower(r, g),
        "precision": "fp32" if g.dtype == "fp32" else "fp64",
    }


def _shape(r: DominantEvent) -> dict[str, str]:
    if not r.shape:
        return {"has_shape": "no", "shape": "", "mnk": ""}
    b, m, n, k = r.shape
    return {"has_shape": "yes", "shape": f"{f'{b} x ' if b > 1 else ''}{m}x{n}x{k}", "mnk": f"{m}x{n}x{k}"}


def args(r: DominantEvent, say: Say) -> dict[str, str]:
    return {
        "kind": key(r.kind), "name": r.name, "short": short_name(r.name) if r.kind == "kernel" else r.name,
        "share": num(r.share_percent, 2), "share0": f"{r.share_percent:.0f}", "self_total_us": t(r.self_device_total_us),
        "launched": yes(r.kind != "op" and r.launched_by), "launched_by": r.launched_by,
        "calls": str(r.calls), "plural": yes(r.calls != 1), "total_us": t(r.total_us), "avg_us": t(r.avg_us),
        "busy": f"{r.gpu_busy_percent:.1f}", "verdict": r.verdict, "verdict_key": key(r.verdict),
        "cause": key(r.cause), "step_headroom_us": t(r.headroom_us / r.steps) if r.steps else "",
        "other_share": yes(r.share_percent <= 95), "other_pct": f"{100 - r.share_percent:.0f}",
        "idle_named": yes(r.gpu_busy_percent < IDLE_NAMED_BELOW), "idle_pct": f"{100 - r.gpu_busy_percent:.0f}",
        "elementwise": yes("elementwise" in r.name or "reduce" in r.name),
        "device": r.device or "", "has_device": yes(r.device),
        **_rate(r), **_shape(r),
    }


NOTES = {
    Instance: lambda n, say: {"has_tflops": yes(n.tflops), "tflops": _f0(n.tflops) if n.tflops else ""},
}
