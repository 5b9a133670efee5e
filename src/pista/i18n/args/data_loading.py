"""data-loading: the arguments of its text (ftl/<lang>/data_loading.ftl)."""

from __future__ import annotations

from pista.i18n._fluent import Say, yes
from pista.i18n._fmt import t
from pista.rules.data_loading import DataLoading, InputPrep, PrepNote, RegionNote


def _where(r: DataLoading) -> str:
    """Where the loading runs: the DataLoader in the training process, the DataLoader's workers, or a region."""
    if r.dataloader:
        return "single" if r.single_process else "workers"
    return "region"


def args(r: DataLoading | InputPrep, say: Say) -> dict[str, str]:
    if isinstance(r, InputPrep):
        return {"form": "prep", "ops": f"{r.ops_per_step:.0f}", "top_ops": ", ".join(r.top_ops),
                "prep_us": t(r.prep_us_per_step), "first_compute": r.first_compute, "where": "region", "region": "",
                "region_us": "", "per_sample": "no", "selects": "", "stacks": "",
                "inflation": f"{r.host_inflation:.0f}"}
    return {"form": "loading", "ops": "", "top_ops": "", "prep_us": "", "first_compute": "", "where": _where(r),
            "region": r.region, "region_us": t(r.region_us_per_step), "per_sample": yes(r.per_sample),
            "selects": f"{r.selects_per_step:.0f}", "stacks": f"{r.stacks_per_step:.0f}",
            "inflation": f"{r.host_inflation:.0f}"}


NOTES = {
    PrepNote: lambda n, say: {"first_layer": yes(n.first_layer), "ops": str(n.ops)},
    RegionNote: lambda n, say: {"has_selects": yes(n.selects), "selects": str(n.selects)},
}
