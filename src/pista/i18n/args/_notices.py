"""pista's notices (pista.notices, pista.isolation): the arguments of their text
(ftl/<lang>/_notices.ftl). Figures are written as the English notices always wrote them."""

from __future__ import annotations

from pista.i18n._fluent import key, yes
from pista.isolation import RuleFailed
from pista.notices import (
    BalancedHost,
    CopyBound,
    CpuActivityMissing,
    CpuStepSpread,
    CyclesOptionsIgnored,
    CyclesOverlap,
    LostRecords,
    NegativeSelfTimes,
    NoGpuWork,
    NoHostEvents,
    OneTimeCost,
    RankNotice,
    RanksByOrder,
    ReferenceConv,
    SharedCpu,
    SkippedLinks,
    WorkersCapped,
    WorldSize,
    ZeroDurations,
)


def _pct(share: float) -> str:
    return f"{100 * share:.0f}"


NOTES = {
    RuleFailed: lambda n, say: {"rule": n.rule, "error": n.error, "stage": key(n.stage)},
    OneTimeCost: lambda n, say: {"share": _pct(n.share), "rules": ", ".join(n.rules)},
    CopyBound: lambda n, say: {"kernels": _pct(n.kernels), "busy": _pct(n.busy), "copies": _pct(n.copies)},
    BalancedHost: lambda n, say: {"ratio": f"{n.ratio:.1f}", "kernels": _pct(n.kernels)},
    LostRecords: lambda n, say: {"calls": str(n.calls), "names": ", ".join(n.names)},
    NoGpuWork: lambda n, say: {"has_devices": yes(n.devices), "devices": ", ".join(n.devices),
                               "has_calls": yes(n.calls), "calls": str(n.calls)},
    ReferenceConv: lambda n, say: {"share": _pct(n.share), "ms": f"{n.ms:.1f}", "calls": str(n.calls),
                                   "name": n.name},
    NoHostEvents: lambda n, say: {},
    CpuActivityMissing: lambda n, say: {"calls": f"{n.calls:,}", "idle": _pct(n.idle)},
    SharedCpu: lambda n, say: {"op": n.op, "mflop": f"{n.mflop:.2g}", "ms": f"{n.ms:.3g}",
                               "factor": f"{n.factor:.0f}"},
    CpuStepSpread: lambda n, say: {"spread": f"{n.longest_ns / n.shortest_ns:.1f}",
                                   "shortest_ms": f"{n.shortest_ns / 1e6:.2f}",
                                   "longest_ms": f"{n.longest_ns / 1e6:.2f}"},
    NegativeSelfTimes: lambda n, say: {"events": f"{n.events:,}"},
    ZeroDurations: lambda n, say: {"zero": f"{n.zero:,}", "complete": f"{n.complete:,}"},
    CyclesOverlap: lambda n, say: {"first": str(n.first), "second": str(n.first + 1)},
    CyclesOptionsIgnored: lambda n, say: {},
    RankNotice: lambda n, say: {"rank": str(n.rank), "notice": n.notice},
    WorldSize: lambda n, say: {"world": str(n.world), "ranks": str(n.ranks)},
    RanksByOrder: lambda n, say: {"count": str(n.count)},
    SkippedLinks: lambda n, say: {"count": str(n.count), "folder": n.folder, "first": n.first},
    WorkersCapped: lambda n, say: {"workers": str(n.workers), "cores": str(n.cores), "processes": str(n.processes)},
}
