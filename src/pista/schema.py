"""The JSON schema of a reading: what `pista analyze --format json` (and `pista check`, the distributed and
cycle readings) write for an analysis, a finding and its evidence, as plain data. pista.render.json writes
it out; the data types are pista.finding's and pista.analysis's."""

from __future__ import annotations

from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from pista._version import __version__
from pista.efficiency import kernel_rows
from pista.policy import is_symptom

if TYPE_CHECKING:
    from pista.analysis import Analysis
    from pista.finding import Evidence, Finding

# `pista analyze --format json` and `pista check --format json`; bump on a breaking change (2: a one-time
# cost's impact, `once`, is its whole time and a share of the window, not per step; findings in reading order)
JSON_SCHEMA_VERSION = 2
KERNEL_ROWS = 50  # device work names in JSON's `kernels`, most time first


def evidence_dict(e: Evidence) -> dict[str, Any]:
    """ts and dur in µs, like the trace file's own fields."""
    return {"name": e.name, "lane": e.lane, "step": e.step, "ts": e.ts_us, "dur": e.dur_us,
            "note": e.note, "stack": list(e.stack)}


def finding_dict(f: Finding) -> dict[str, Any]:
    assert f.severity is not None
    return {"rule": f.rule, "severity": f.severity.value, "symptom": is_symptom(f),
            "title": f.title, "message": f.message,
            "advice": f.advice, "impact": {"us": f.impact.us, "share": f.impact.share,
                                           "once": f.impact.once, "basis": f.basis,
                                           "replayed": f.impact.replayed, "alone_us": f.impact.alone_us,
                                           "unprofiled_us": f.impact.unprofiled_us,
                                           "unprofiled_share": f.impact.unprofiled_share},
            "evidence": [e.to_dict() for e in f.evidence], "metrics": f.metrics}


def analysis_dict(a: Analysis, row_limit: int = 25) -> dict[str, Any]:
    sort_by = "cuda_time_total" if a.facts.has_gpu else "cpu_time_total"
    top = a.top_fix
    return {
        "schema_version": JSON_SCHEMA_VERSION,
        "pista_version": __version__,
        "source": a.source,
        "summary": dict(a.summary.to_dict(),
                        top_fix=None if top is None else {"rule": top.rule, "text": top.fix_here}),
        "findings": [f.to_dict() for f in a.findings],
        "kernels": [asdict(k) for k in kernel_rows(a.facts, KERNEL_ROWS)],
        "table": a.table.to_dict(sort_by, row_limit),
        "notices": a.notices,
    }
