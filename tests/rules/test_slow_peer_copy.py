"""slow-peer-copy: peer-to-peer copies far slower to one GPU than to another in the same trace (review 6's silence
on GPUPuzzlers' p2p_copy: one copy stream at 7.5 GB/s filled the window)."""

from __future__ import annotations

from collections import defaultdict

import pytest
import raw

from pista.rules.slow_peer_copy import ID, SLOW_SHARE

NAME = "foreign/gp_p2p_copy"


def _rates(name: str) -> dict[tuple[int, int], tuple[float, float, float]]:
    """Per (from, to) GPU: bytes, µs, GB/s, from the raw peer copies."""
    acc: dict[tuple[int, int], list[float]] = defaultdict(lambda: [0.0, 0.0])
    for e in raw.complete(name, "gpu_memcpy"):
        if str(e["name"]).startswith("Memcpy PtoP"):
            a = acc[(e["args"]["fromDevice"], e["args"]["toDevice"])]
            a[0] += e["args"]["bytes"]
            a[1] += float(e["dur"])
    return {k: (b, d, b / d / 1000) for k, (b, d) in acc.items()}


def test_the_slow_pair_is_named_with_its_rate(analysis_of):
    rates = _rates(NAME)
    fast = max(rates, key=lambda k: rates[k][2])
    slow = [k for k in rates if rates[k][2] < SLOW_SHARE * rates[fast][2]]
    assert len(rates) == 3 and len(slow) == 1  # the middle pair (51% of the fastest) is not slow
    finding = analysis_of(NAME).finding(ID)
    assert finding is not None and analysis_of(NAME).top_fix.rule == ID
    r = finding.metrics
    assert (r["slow"][0]["src"], r["slow"][0]["dst"]) == slow[0] and (r["fast"]["src"], r["fast"]["dst"]) == fast
    assert r["slow"][0]["gb_s"] == pytest.approx(rates[slow[0]][2], rel=0.01)
    bytes_, dur, _ = rates[slow[0]]
    assert r["saved_us"] == pytest.approx(dur - bytes_ / rates[fast][2] / 1000, rel=0.01)
    assert f"GPU {slow[0][0]} -> GPU {slow[0][1]}" in finding.fix_here and "nvidia-smi topo" in finding.fix_here


def test_silent_where_every_pair_runs_near_the_fastest(tmp_path):
    """The same trace without its slow pair: the two left (88.5 and 45.5 GB/s, 51%) are both linked."""
    import gzip
    import json

    from pista.analysis import analyze

    rates = _rates(NAME)
    slowest = min(rates, key=lambda k: rates[k][2])
    with gzip.open(raw.FIXTURES / f"{NAME}.json.gz", "rt") as f:
        doc = json.load(f)
    doc["traceEvents"] = [e for e in doc["traceEvents"] if not (str(e.get("name", "")).startswith("Memcpy PtoP")
                          and (e["args"]["fromDevice"], e["args"]["toDevice"]) == slowest)]
    path = tmp_path / "two_fast_pairs.json"
    path.write_text(json.dumps(doc))
    assert ID not in analyze(str(path)).rules_fired
