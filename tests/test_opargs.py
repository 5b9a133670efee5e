"""op_args: each op's recorded fields, read once and kept in arrays, against a plain decode."""

from __future__ import annotations

import json

import msgspec

from pista.opargs import op_args
from pista.trace.facts import derive
from pista.trace.load import load_trace


def _op(k: int, args: object) -> dict:
    return {"ph": "X", "cat": "cpu_op", "name": f"aten::op{k % 3}", "pid": 1, "tid": 1, "ts": 10.0 * k,
            "dur": 5.0, "args": args}


def test_fields_read_back_as_a_plain_decode_gives_them(tmp_path):
    odd = [
        {"Input Dims": [[2, 3], []], "Input type": ["float", ""], "Sequence number": 7},
        {"Input Dims": [[2, 3], []], "Input type": ["c10::BFloat16"], "Sequence number": 2**63 - 1},
        {"Sequence number": "twelve", "Concrete Inputs": ["", "1"]},
        {"Sequence number": 1.5},
        {"Sequence number": None, "Input Dims": []},
        {},
        "not an object",
        {"Sequence number": -(2**63) + 1},
    ]
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"traceEvents": [_op(k, a) for k, a in enumerate(odd)]}))
    facts = derive(load_trace(path))
    ask = [5, 0, 3, 0, 7, 1, 2, 4, 6, 6]
    first = op_args(facts, ask[:3])  # some read now, the rest on the second call
    got = first + op_args(facts, ask[3:])
    for i, a in zip(ask, got, strict=True):
        fields = odd[i]
        if not isinstance(fields, dict):
            assert a is None
            continue
        assert a.seq == fields.get("Sequence number") and type(a.seq) is type(fields.get("Sequence number"))
        assert a.dims == fields.get("Input Dims") and a.types == fields.get("Input type")
        assert a.concrete == fields.get("Concrete Inputs")
        assert msgspec.json.decode(a.dims_text) == fields.get("Input Dims")
    assert got[1].dims_text is got[3].dims_text is got[5].dims_text  # one copy of a repeated text
