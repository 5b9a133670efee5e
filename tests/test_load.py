"""The loader: real traces into columns, and odd-but-valid traces still load."""

from __future__ import annotations

import gzip
import json

import msgspec
import numpy as np
from conftest import fixture

from pista.trace.facts import derive
from pista.trace.load import load_trace
from pista.trace.model import PH_COMPLETE, PH_FLOW_END, PH_FLOW_START, Trace


def write(tmp_path, doc, name="t.json"):
    path = tmp_path / name
    path.write_text(json.dumps(doc))
    return path


def small_trace() -> dict:
    return json.loads(gzip.decompress(fixture("seed_mm64_warm").read_bytes()))


def test_columns_of_a_real_trace():
    trace = load_trace(fixture("seed_mm64_warm"))
    doc = small_trace()
    assert trace.event_count == len(doc["traceEvents"])
    first = doc["traceEvents"][0]
    assert trace.event_name(0) == first["name"]
    assert trace.ts[0] == round(first["ts"] * 1000)
    assert trace.dur[0] == round(first["dur"] * 1000)
    assert trace.external_id[0] == first["args"]["External id"]
    kernels = trace.category_mask({"kernel"})
    assert kernels.sum() == sum(1 for e in doc["traceEvents"] if e.get("cat") == "kernel")
    assert (trace.correlation[kernels] > 0).all() and (trace.stream[kernels] == 7).all()
    assert trace.device_properties[0]["name"] == "NVIDIA H200"
    assert trace.base_time_ns == doc["baseTimeNanoseconds"]
    assert trace.string_ids["Spans"] < 0  # string pids get ids of their own
    # the flow events are out of the columns; each row still knows its place in the file
    events, rows = doc["traceEvents"], trace.file_rows().tolist()
    assert all(trace.event_name(i) == events[r]["name"] and trace.ts[i] == round(events[r].get("ts", 0) * 1000)
               for i, r in enumerate(rows))
    assert sorted(rows + trace.flows["row"].tolist()) == list(range(len(events)))
    assert {events[r]["ph"] for r in trace.flows["row"].tolist()} == {"s", "f"}
    assert trace.args(0)["External id"] == first["args"]["External id"]


def test_plain_and_gzip_agree(tmp_path):
    plain = write(tmp_path, small_trace())
    a, b = load_trace(plain), load_trace(fixture("seed_mm64_warm"))
    assert np.array_equal(a.ts, b.ts) and a.names == b.names


def test_unknown_category_missing_args_extra_fields_still_load(tmp_path):
    doc = small_trace()
    events = doc["traceEvents"]
    events[0]["cat"] = "brand_new_category"
    events[0]["extra_field"] = {"nested": [1, 2, 3]}
    for e in events:
        if e.get("cat") == "cpu_op":
            e.pop("args", None)
    doc["someNewTopLevelKey"] = {"x": 1}
    trace = load_trace(write(tmp_path, doc))
    assert trace.event_count == len(events)
    assert "brand_new_category" in trace.categories
    facts = derive(trace)
    assert facts.has_gpu
    ops = trace.category_mask({"cpu_op"})
    assert (trace.external_id[ops] == -1).all()


def test_string_pids_and_tids(tmp_path):
    doc = {"traceEvents": [
        {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": "123", "tid": "worker", "ts": 10.0, "dur": 5.0},
        {"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": "123", "tid": "worker", "ts": 11.0, "dur": 1.0},
    ]}
    trace = load_trace(write(tmp_path, doc))
    assert trace.pid.tolist() == [123, 123]
    assert trace.tid[0] == trace.tid[1] < 0
    facts = derive(trace)
    assert facts.parent[1] == 0 and facts.self_time[0] == 4000


def test_a_bare_event_list_is_a_trace(tmp_path):
    events = [{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 1.5, "dur": 2.25}]
    trace = load_trace(write(tmp_path, events))
    assert trace.ph[0] == PH_COMPLETE and trace.dur[0] == 2250


def test_flow_events_and_overhead_lane():
    trace = load_trace(fixture("seed_mm64_cold"))
    flows = trace.flows  # out of the columns, which hold no ac2g event
    assert flows["row"].size and (flows["flow_id"] >= 0).all() and not trace.category_mask({"ac2g"}).any()
    assert {trace.categories[c] for c in flows["cat"].tolist()} == {"ac2g"}
    facts = derive(trace)
    kinds = {lane.kind for lane in facts.lanes}
    assert {"cpu", "gpu", "overhead"} <= kinds
    assert any(trace.event_name(i) == "Activity Buffer Request" for i in np.flatnonzero(facts.is_overhead))


def test_old_category_spellings_are_normalised(tmp_path):
    doc = {"traceEvents": [
        {"ph": "X", "cat": "Operator", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 0, "dur": 10,
         "args": {"External id": 7}},
        {"ph": "X", "cat": "Runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 2, "dur": 3,
         "args": {"correlation": 99, "External id": 7}},
        {"ph": "X", "cat": "Kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 6, "dur": 4,
         "args": {"correlation": 99, "External id": 7, "stream": 7, "device": 0}},
    ]}
    facts = derive(load_trace(write(tmp_path, doc)))
    assert facts.is_device_work[2] and facts.launcher[2] == 1 and facts.owner[2] == 0


def _epoch_copy(tmp_path, name: str, base_us: str) -> tuple[str, np.ndarray]:
    """A real trace moved to epoch microseconds with ns decimals (as older Kineto and other tools
    write them), every number written exactly; and the ns times the copy must read back."""
    from decimal import Decimal

    import msgspec

    doc = json.loads(gzip.decompress(fixture(name).read_bytes()), parse_float=Decimal)
    doc.pop("baseTimeNanoseconds", None)
    base = Decimal(base_us)
    for e in doc["traceEvents"]:
        if "ts" in e:
            e["ts"] = Decimal(e["ts"]) + base
    path = tmp_path / "epoch.json"
    path.write_bytes(msgspec.json.Encoder(decimal_format="number").encode(doc))
    original = load_trace(fixture(name))
    shift = int(base * 1000)
    return str(path), original.ts + shift


def test_epoch_microseconds_are_read_to_the_nanosecond(tmp_path, monkeypatch):
    # 1712195495519689.047 µs cannot be held by a float64 (its step there is 0.25 µs)
    path, expected = _epoch_copy(tmp_path, "gpu/host_sync_item", "1712195495519689.047")
    trace = load_trace(path)
    assert np.array_equal(np.sort(trace.ts), np.sort(expected))
    # the same through the streamed reader's size: it hands such times to the exact reader
    from pista.trace import load as load_module

    monkeypatch.setattr(load_module, "STREAM_MIN_BYTES", 0)
    assert np.array_equal(np.sort(load_trace(path).ts), np.sort(expected))


def test_epoch_times_keep_self_times_and_nesting(tmp_path):
    from pista.table import build_table

    path, _ = _epoch_copy(tmp_path, "gpu/host_sync_item", "1695835535123456.789")
    shifted = build_table(derive(load_trace(path)))
    original = build_table(derive(load_trace(fixture("gpu/host_sync_item"))))
    assert abs(shifted.self_cpu_total_us - original.self_cpu_total_us) < 0.001
    assert min(r.self_cpu_us for r in shifted.rows) >= 0
    rows = {(r.name, r.device_type): (r.calls, round(r.self_cpu_us, 3)) for r in shifted.rows}
    assert rows == {(r.name, r.device_type): (r.calls, round(r.self_cpu_us, 3)) for r in original.rows}


def test_a_trace_built_by_hand_keeps_its_flow_events_apart():
    """Flow events (ph s/f) leave the columns whoever builds the Trace; each row keeps its place in
    the file, which its args go by."""
    phases = [PH_COMPLETE, PH_FLOW_START, PH_COMPLETE, PH_FLOW_END, PH_COMPLETE]
    n = len(phases)
    ints = np.arange(n, dtype=np.int64)
    trace = Trace(source="t", names=["a", "b", "c", "d", "e"], categories=["cpu_op"],
                  ph=np.array(phases, dtype=np.uint8), cat=np.zeros(n, np.int16), name=ints.astype(np.int32),
                  pid=np.ones(n, np.int64), tid=np.ones(n, np.int64), ts=ints * 1000, dur=np.full(n, 500),
                  external_id=np.full(n, -1), correlation=np.full(n, -1), stream=np.full(n, -1),
                  device=np.full(n, -1), flow_id=np.array([-1, 7, -1, 7, -1]),
                  raw_args=[msgspec.Raw(b'{"k": %d}' % k) for k in range(n)])
    assert len(trace) == 3 and trace.event_count == n and trace.flow_count == 2
    assert trace.file_rows().tolist() == [0, 2, 4] and trace.flows["row"].tolist() == [1, 3]
    assert [trace.event_name(i) for i in range(3)] == ["a", "c", "e"]
    assert [trace.args(i)["k"] for i in range(3)] == [0, 2, 4]
    assert trace.flows["flow_id"].tolist() == [7, 7] and (trace.flow_id == -1).all()
    assert (trace.start_ns, trace.end_ns) == (0, 4500)


def test_the_command_line_keeps_the_columns_only_sql_shows_only_for_sql():
    """open_trace lets the flow events' columns go (no rule reads them) but keeps their places and
    the span they reach, and lets go of the args stream and device ids and, once derived, the
    correlation ids; `pista sql` keeps the correlation ids for its views, and everything for a
    query of `events`."""
    from pista.cli.common import open_trace

    path = fixture("seed_mm64_cold")
    with gzip.open(path, "rt") as handle:
        raw = json.load(handle)["traceEvents"]
    flows = [e for e in raw if e.get("ph") in ("s", "f")]
    timed = [e for e in raw if e.get("ph") != "M" and "ts" in e]
    assert flows
    lean_facts = open_trace(str(path), quiet=True)
    lean = lean_facts.trace
    views = open_trace(str(path), quiet=True, sql=True).trace
    full_facts = open_trace(str(path), quiet=True, sql=True, events_view=True)
    full = full_facts.trace
    assert set(lean.flows) == {"before"} and len(full.flows) > 1
    assert lean.stream is lean.device is lean.correlation is None
    assert views.stream is views.device is None and np.array_equal(views.correlation, full.correlation)
    assert {e["args"]["stream"] for e in raw if "stream" in e.get("args", {})} <= set(full.stream.tolist())
    # the links derive made from the correlation ids are the same without them
    assert np.array_equal(lean_facts.launcher, full_facts.launcher)
    assert lean.event_count == full.event_count == len(raw) and lean.flow_count == len(flows)
    assert lean.start_ns == full.start_ns == round(min(e["ts"] for e in timed) * 1000)
    assert lean.end_ns == full.end_ns
    assert np.array_equal(lean.file_rows(), full.file_rows())
