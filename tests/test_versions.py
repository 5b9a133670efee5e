"""Traces as older and newer torch/Kineto versions write them.

Each variant is made from a real H200 trace by changing only how it is spelled (integer
microseconds, old category names, lower-case "external id", string stream tids, unquoted N/A,
metadata before or after the events, no baseTimeNanoseconds...). The content is the same, so the
rebuilt table must come out the same as for the original; the expectations come from the
original's JSON (or the table torch printed), not from pista's own output on the variant.
"""

from __future__ import annotations

import copy
import gzip
import json
from decimal import Decimal

import numpy as np
import pytest
from conftest import FIXTURES, fixture
from torch_table import parse_table

from pista.analysis import analyze
from pista.cli import main
from pista.table import build_table
from pista.trace.facts import derive
from pista.trace.load import decode_trace, load_trace

TRACE = "series_linear_train"  # forward, backward, optimizer: kernels, memcpy, memset, steps
DEVICE_WORK = {"kernel", "gpu_memcpy", "gpu_memset"}
OLD_SPELLING = {"cpu_op": "Operator", "cuda_runtime": "Runtime", "kernel": "Kernel", "gpu_memcpy": "Memcpy",
                "gpu_memset": "Memset", "user_annotation": "User annotation", "python_function": "Python"}


def doc_of(name: str = TRACE) -> dict:
    return json.loads(gzip.decompress(fixture(name).read_bytes()))


def load_doc(doc: dict, tmp_path, text: str | None = None):
    path = tmp_path / "variant.json"
    path.write_text(text if text is not None else json.dumps(doc))
    return load_trace(path)


def table_of(trace):
    return build_table(derive(trace))


def rows_by_name(table) -> dict[str, tuple[float, float, int]]:
    return {r.name: (round(r.self_cpu_us, 3), round(r.self_device_us, 3), r.calls) for r in table.rows}


def test_ns_resolution_timestamps_are_exact(tmp_path):
    """Kineto since 2024 writes ts/dur as microseconds with three decimals: exact nanoseconds."""
    raw = gzip.decompress(fixture(TRACE).read_bytes())
    exact = json.loads(raw, parse_float=Decimal)["traceEvents"]
    trace = decode_trace(raw, TRACE)
    want_ts = np.array([int(Decimal(e.get("ts", 0)) * 1000) for e in exact], dtype=np.int64)
    want_dur = np.array([int(Decimal(e.get("dur", 0)) * 1000) for e in exact], dtype=np.int64)
    rows = trace.file_rows()  # the columns' rows; the flow events' apart
    assert np.array_equal(trace.ts, want_ts[rows]) and np.array_equal(trace.dur, want_dur[rows])
    assert np.array_equal(trace.flows["ts"], want_ts[trace.flows["row"]])


def test_integer_microsecond_timestamps(tmp_path):
    """Older Kineto wrote whole microseconds as integers."""
    doc = doc_of()
    for e in doc["traceEvents"]:
        for key in ("ts", "dur"):
            if key in e:
                e[key] = round(e[key])
    trace = load_doc(doc, tmp_path)
    want = np.array([e.get("ts", 0) * 1000 for e in doc["traceEvents"]], dtype=np.int64)
    assert np.array_equal(trace.ts, want[trace.file_rows()])
    device = trace.category_mask(DEVICE_WORK)
    want = sum(e["dur"] for e in doc["traceEvents"] if e.get("cat") in DEVICE_WORK and e.get("ph") == "X")
    assert table_of(trace).self_device_total_us == pytest.approx(want)
    assert device.any()


def old_kineto(doc: dict) -> tuple[dict, str]:
    """The same trace as Kineto wrote it in early 2021: old categories, "external id" on the GPU
    side, "stream N" tids, bare N/A bandwidths, no baseTimeNanoseconds, metadata after the events."""
    doc = copy.deepcopy(doc)
    events = doc["traceEvents"]
    for e in events:
        gpu = e.get("cat") in DEVICE_WORK
        if e.get("cat") in OLD_SPELLING:
            e["cat"] = OLD_SPELLING[e["cat"]]
        if gpu:
            args = e.get("args", {})
            if "External id" in args:
                args["external id"] = args.pop("External id")
            e["tid"] = f"stream {e['tid']}"
            if e["cat"] == "Memcpy":
                args["memory bandwidth (GB/s)"] = "__NA__"
        elif e.get("ph") == "M" and e.get("name") == "thread_name" and e.get("pid") == 0:
            e["tid"] = f"stream {e['tid']}"
    doc.pop("baseTimeNanoseconds", None)
    doc = {"schemaVersion": 1, "traceEvents": events, **{k: v for k, v in doc.items() if k != "traceEvents"}}
    return doc, json.dumps(doc, indent=2).replace('"__NA__"', "N/A")


def test_old_kineto_spelling_gives_the_same_table(tmp_path):
    doc = doc_of()
    assert any(e.get("cat") == "gpu_memcpy" for e in doc["traceEvents"])  # so N/A is really exercised
    variant, text = old_kineto(doc)
    assert "N/A" in text
    old = load_doc(variant, tmp_path, text)
    new = load_trace(fixture(TRACE))
    assert old.base_time_ns is None and len(old) == len(new)
    assert any("bare NaN/Infinity/N/A" in n for n in old.notices)
    facts = derive(old)
    kernels = np.flatnonzero(facts.is_device_work)
    assert (facts.owner[kernels] >= 0).mean() == (derive(new).owner[derive(new).is_device_work] >= 0).mean()
    assert rows_by_name(table_of(old)) == rows_by_name(table_of(new))
    torch = parse_table(FIXTURES / f"{TRACE}.table.txt")
    assert table_of(old).self_device_total_us == pytest.approx(torch.self_device_total_us, rel=0.01)


@pytest.mark.parametrize("where", ["before", "after"])
def test_metadata_before_or_after_the_events(tmp_path, where):
    """Kineto moved baseTimeNanoseconds and displayTimeUnit before traceEvents in 2025."""
    doc = doc_of()
    meta = {k: v for k, v in doc.items() if k != "traceEvents"}
    ordered = {**meta, "traceEvents": doc["traceEvents"]} if where == "before" else \
        {"traceEvents": doc["traceEvents"], **meta}
    trace = load_doc(ordered, tmp_path)
    assert trace.base_time_ns == doc["baseTimeNanoseconds"]
    assert trace.device_properties[0]["name"] == "NVIDIA H200"


def test_no_base_time_and_a_different_display_unit(tmp_path):
    """displayTimeUnit only changes how viewers show times: ts and dur stay microseconds."""
    doc = doc_of()
    doc.pop("baseTimeNanoseconds")
    doc["displayTimeUnit"] = "ns"
    trace = load_doc(doc, tmp_path)
    assert trace.base_time_ns is None
    assert np.array_equal(trace.dur, load_trace(fixture(TRACE)).dur)


def test_a_cpu_only_trace(capsys):
    path = FIXTURES / "gpu" / "cpu_only.json.gz"
    if not path.exists():
        pytest.skip("no cpu_only fixture in this checkout")
    facts = derive(load_trace(path))
    assert not facts.has_gpu and facts.is_host.any()
    torch = parse_table(FIXTURES / "gpu" / "cpu_only.table.txt")
    assert torch.self_device_total_us is None
    assert build_table(facts).self_cpu_total_us == pytest.approx(torch.self_cpu_total_us, rel=0.01)
    assert main(["table", str(path)]) == 0 and main(["analyze", str(path)]) == 0
    assert capsys.readouterr().err == ""


def test_a_trace_with_only_gpu_events(tmp_path, capsys):
    """What is left of a trace when the host side was not recorded: kernels, copies, GPU annotations."""
    doc = doc_of()
    keep = [e for e in doc["traceEvents"] if e.get("pid") == 0 or e.get("ph") == "M"]
    doc["traceEvents"] = keep
    trace = load_doc(doc, tmp_path)
    facts = derive(trace)
    assert facts.has_gpu and not facts.is_host.any()
    want = sum(e["dur"] for e in keep if e.get("cat") in DEVICE_WORK and e.get("ph") == "X")
    assert build_table(facts).self_device_total_us == pytest.approx(want)
    analysis = analyze(facts)
    assert analysis.summary is not None
    path = tmp_path / "variant.json"
    assert main(["table", str(path)]) == 0 and main(["analyze", str(path)]) == 0
    assert capsys.readouterr().err == ""


def test_string_pids_of_the_profiler_spans():
    """Kineto's own spans use "pid": "Spans" and "pid": "Traces"; they are not host work."""
    trace = load_trace(fixture(TRACE))
    assert {"Spans", "Traces"} <= set(trace.string_ids)
    facts = derive(trace)
    spans = trace.pid == trace.string_ids["Spans"]
    assert spans.any() and not facts.is_host[spans].any() and not facts.is_device_work[spans].any()


def test_a_trailing_comma_after_the_last_event(tmp_path):
    """Hand-edited or naively concatenated traces end the list with '},]': read, not called cut off."""
    raw = gzip.decompress(fixture(TRACE).read_bytes()).decode()
    end = raw.rindex("]")
    text = raw[:end].rstrip() + ",\n" + raw[end:]
    trace = load_doc({}, tmp_path, text)
    assert trace.event_count == len(json.loads(raw)["traceEvents"])
    assert not any("cut off" in n for n in trace.notices)
    assert trace.metadata.get("traceName")
