"""slow-peer-copy: the arguments of its text (ftl/<lang>/slow_peer_copy.ftl)."""

from __future__ import annotations

from pista.i18n._fluent import Say
from pista.i18n._fmt import t
from pista.rules.slow_peer_copy import PeerPair, SlowCopy, SlowPeerCopy


def _pair(p: PeerPair, say: Say) -> str:
    return say("pair-item", src=str(p.src), dst=str(p.dst), copies=str(p.copies), mib=f"{p.mib:.1f}",
               gb_s=f"{p.gb_s:.1f}")


def args(r: SlowPeerCopy, say: Say) -> dict[str, str]:
    slowest = r.slow[0]
    return {
        "pairs": "; ".join(_pair(p, say) for p in r.slow), "fast": _pair(r.fast, say),
        "fast_src": str(r.fast.src), "fast_dst": str(r.fast.dst), "fast_gb_s": f"{r.fast.gb_s:.1f}",
        "src": str(slowest.src), "dst": str(slowest.dst), "gb_s": f"{slowest.gb_s:.1f}",
        "slow_us": t(r.slow_us), "saved_us": t(r.saved_us / max(r.steps, 1)),
    }


NOTES = {
    SlowCopy: lambda n, say: {"src": str(n.src), "dst": str(n.dst), "gb_s": f"{n.gb_s:.1f}"},
}
