"""A fix whose saving grows only once another is made reads below that other fix (review 6: gp_swimming_streams,
fp32 GEMMs beside pageable copies that block the host; TF32 came first with "more once the fixes above it are
made", above the copies whose fix it depended on)."""

from __future__ import annotations

from pista.analysis import analyze
from tests.raw import FIXTURES, complete

NAME = "foreign/gp_swimming_streams"


def test_the_fix_another_depends_on_comes_first() -> None:
    pageable = [e for e in complete(NAME) if "Pageable" in str(e.get("name", ""))]
    sgemm = [e for e in complete(NAME, "kernel") if "sgemm" in str(e.get("name", ""))]
    assert sum(float(e["dur"]) for e in pageable) > 0.3 * sum(float(e["dur"]) for e in sgemm)
    analysis = analyze(str(FIXTURES / f"{NAME}.json.gz"))
    order = analysis.rules_fired
    assert order.index("pageable-memcpy") < order.index("fp32-gemm")
    fp32 = next(f for f in analysis.findings if f.rule == "fp32-gemm")
    assert fp32.impact.alone_us is not None and fp32.impact.alone_us < fp32.impact.us  # it grows after the copies
    assert analysis.top_fix is not None and analysis.top_fix.rule == "pageable-memcpy"
