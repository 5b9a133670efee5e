"""channels-last: the arguments of its text (ftl/<lang>/channels_last.ftl)."""

from __future__ import annotations

from pista.i18n._fluent import Say, key
from pista.i18n._fmt import t
from pista.rules.channels_last import ChannelsLast, NchwKernels, NchwNote


def _kind(k: NchwKernels, say: Say) -> str:
    return say("kind-item", kind=k.kind, kind_key=key(k.kind), us=t(k.us_per_step), calls=f"{k.per_step:.0f}",
               kernel=k.kernel)


def args(r: ChannelsLast, say: Say) -> dict[str, str]:
    return {
        "conv_share": f"{r.conv_share_percent:.0f}", "gpu_share": f"{r.gpu_share_percent:.0f}",
        "kernel_us": t(r.kernel_us), "kinds": "; ".join(_kind(k, say) for k in r.kinds),
        "saved_us": t(r.gpu_saved_us), "per": "step" if r.steps > 1 else "window", "busy": f"{r.busy_percent:.0f}",
    }


NOTES = {
    NchwNote: lambda n, say: {"kind": n.kind, "kind_key": key(n.kind)},
}
