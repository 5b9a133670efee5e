"""A kernel's op is the one that launched it: where a file uses an External id twice, the op by id that lies wholly
before or after the launch call is not its owner, the op around the call is (h100_tiny_transformer_fwd's TF32 GEMM
read "from aten::empty"; hta_alexnet's pageable copies read "from aten::detach")."""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from pista.trace.facts import derive
from pista.trace.load import load_trace
from tests.raw import FIXTURES, complete

NAME = "foreign/hta_alexnet"


def innermost_op_around(ops_by_tid: dict, tid: object, ts: float) -> str | None:
    """The shortest cpu_op on the thread whose span holds ts, from the raw events."""
    around = [o for o in ops_by_tid[tid] if float(o["ts"]) <= ts <= float(o["ts"]) + float(o["dur"])]
    return min(around, key=lambda o: float(o["dur"]))["name"] if around else None


def _expected_owner(c: dict, outside: bool, ops_by_id: dict, ops_by_tid: dict, launches: dict) -> str | None:
    call = launches[c["args"]["correlation"]]
    if outside or not ops_by_id[c["args"].get("External id")]:
        return innermost_op_around(ops_by_tid, call["tid"], float(call["ts"]))
    return ops_by_id[c["args"].get("External id")][0]["name"]


def test_a_copy_is_owned_by_the_op_around_its_launch() -> None:
    ops_by_tid: dict = defaultdict(list)
    ops_by_id: dict = defaultdict(list)
    for o in complete(NAME, "cpu_op"):
        ops_by_tid[o["tid"]].append(o)
        ops_by_id[o.get("args", {}).get("External id")].append(o)
    launches = {e["args"]["correlation"]: e for e in complete(NAME, "cuda_runtime") if "correlation" in e.get("args", {})}
    copies = [e for e in complete(NAME) if str(e.get("name", "")).startswith("Memcpy HtoD")]

    def outside(c: dict) -> bool:
        """The op with the copy's External id lies wholly before or after the copy's launch call."""
        call = launches[c["args"]["correlation"]]
        by_id = ops_by_id[c["args"].get("External id")]
        return bool(by_id) and all(float(o["ts"]) + float(o["dur"]) < float(call["ts"]) or
                                   float(o["ts"]) > float(call["ts"]) + float(call["dur"]) for o in by_id)

    assert any(outside(c) for c in copies), "some copies' External ids name an op far from their launch"
    facts = derive(load_trace(str(FIXTURES / f"{NAME}.json.gz")))
    trace = facts.trace
    names = trace.name_array[trace.name]
    idx = np.flatnonzero(facts.is_device_work & np.char.startswith(names.astype(str), "Memcpy HtoD"))
    owners = sorted((float(trace.ts[i]), names[facts.owner[i]] if facts.owner[i] >= 0 else None) for i in idx)
    expected = sorted((float(c["ts"]), _expected_owner(c, outside(c), ops_by_id, ops_by_tid, launches)) for c in copies)
    assert len(owners) == len(expected)
    for (ts_a, got), (ts_b, want) in zip(owners, expected, strict=True):
        assert abs(ts_a * 1e-3 - ts_b) < 1 or ts_a == ts_b
        assert got == want
