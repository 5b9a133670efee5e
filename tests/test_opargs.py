"""op_args: each op's recorded fields, read once and kept in arrays, against a plain decode."""

from __future__ import annotations

import json

import msgspec
from conftest import fixture

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


def test_the_ops_that_launched_kernels_are_read_in_one_pass(monkeypatch):
    """The first request for one launching op reads them all (one pass over a streamed file); later
    requests for any of them read nothing, and what they get is what a plain decode gives."""
    facts = derive(load_trace(fixture("series_linear_train")))  # its own: nothing read yet
    trace = facts.trace
    launchers = sorted({int(o) for o in facts.owner[facts.is_device_work].tolist() if o >= 0})
    assert len(launchers) > 10
    reads = []
    real = type(trace).decode_args
    monkeypatch.setattr(type(trace), "decode_args", lambda self, idx, struct: reads.append(len(idx))
                        or real(self, idx, struct))
    op_args(facts, launchers[:1])
    assert reads == [len(launchers)]
    later = op_args(facts, launchers[::-1])
    assert reads == [len(launchers)]  # nothing more read
    for i, a in zip(launchers[::-1], later, strict=True):
        plain = trace.args(i)
        assert a is not None and a.dims == plain.get("Input Dims") and a.types == plain.get("Input type")


def test_text_ids_name_the_texts_op_args_reads():
    """opargs.text_ids: per event the ids of the texts op_args gives (NO_ARGS where it gives None),
    equal ids for equal texts, on every event of a real trace."""
    import numpy as np

    from pista.opargs import NO_ARGS, text_ids

    facts = derive(load_trace(fixture("gpu/capture_transformer")))
    events = np.arange(len(facts.trace)).tolist()  # ops, kernels, and events with no args object
    ids, texts = text_ids(facts, events)
    read = op_args(facts, events)
    assert ids.shape == (len(events), 3) and any(a is None for a in read) and any(a is not None for a in read)
    for row, a in zip(ids.tolist(), read, strict=True):
        if a is None:
            assert row[0] == NO_ARGS
        else:
            assert [texts[k] for k in row] == [a.dims_text, a.types_text, a.concrete_text]
    assert len(set(texts)) == len(texts)  # one id per text


def test_ops_asked_for_one_at_a_time_read_as_all_at_once():
    """The store keeps a row per event read, however the requests come (python-loop asks thousands of
    times for a few ops): asking for every event one by one, in a shuffled order, gives what one
    request for all of them gives on a fresh analysis, field for field."""
    import numpy as np

    from pista.opargs import sequence_numbers

    path = fixture("gpu/capture_transformer")
    events = np.arange(len(load_trace(path))).tolist()
    at_once = op_args(derive(load_trace(path)), events)
    facts = derive(load_trace(path))
    order = np.random.default_rng(7).permutation(len(events)).tolist()
    one_by_one: list = [None] * len(events)
    for k in order:
        one_by_one[k] = op_args(facts, [events[k]])[0]
    for a, b in zip(at_once, one_by_one, strict=True):
        assert (a is None) == (b is None)
        if a is not None:
            assert (a.dims_text, a.types_text, a.concrete_text, a.seq) == (b.dims_text, b.types_text,
                                                                          b.concrete_text, b.seq)
    assert sequence_numbers(facts, events).tolist() == sequence_numbers(derive(load_trace(path)), events).tolist()
