"""Traces cut off mid-write (the job died while exporting) are salvaged: every complete event is
read, the analysis runs, and a notice says how much came back.

The expected event count at each cut comes from the standard library's JSON decoder walking the
intact file event by event, not from pista.
"""

from __future__ import annotations

import bisect
import gzip
import json
import re
import zlib

import numpy as np
import pytest
from conftest import fixture

from pista.analysis import analyze
from pista.cli import main
from pista.errors import BadTrace
from pista.trace.load import decode_trace, load_trace

FIXTURES = ["seed_mm64_cold", "series_linear_train", "gpu/pageable_memcpy", "gpu/cpu_only"]
FRACTIONS = [0.1, 0.25, 0.5, 0.75, 0.9, 0.99, 0.999]


def intact(name: str) -> bytes:
    return gzip.decompress(fixture(name).read_bytes())


def event_ends(data: bytes) -> list[int]:
    """Byte offset just past each event of the intact file, by json.JSONDecoder.raw_decode."""
    text = data.decode()
    assert len(text) == len(data), "the fixtures are ASCII, so characters are bytes"
    decoder = json.JSONDecoder()
    pos = re.search(r'"traceEvents"\s*:\s*\[', text).end()
    ends = []
    while True:
        while text[pos] in " \t\r\n,":
            pos += 1
        if text[pos] == "]":
            return ends
        _, pos = decoder.raw_decode(text, pos)
        ends.append(pos)


def complete_before(ends: list[int], cut: int) -> int:
    return bisect.bisect_right(ends, cut)


def assert_salvaged(trace, full, expected: int) -> None:
    assert trace.event_count == expected
    # the salvaged events are the file's first events, unchanged (the flow events aside, in both)
    kept = int(np.searchsorted(full.file_rows(), expected))
    assert np.array_equal(trace.file_rows(), full.file_rows()[:kept])
    assert np.array_equal(trace.ts, full.ts[:kept])
    assert np.array_equal(trace.dur, full.dur[:kept])
    assert [trace.event_name(i) for i in range(kept)] == [full.event_name(i) for i in range(kept)]
    cut_notices = [n for n in trace.notices if "cut off" in n]
    assert len(cut_notices) == 1
    if f"after its event list: all {expected} events read" in cut_notices[0]:
        assert expected == full.event_count  # cut in the keys after the event list
    else:
        assert f"salvaged {expected} complete event(s)" in cut_notices[0]
    assert not any("malformed" in n for n in trace.notices), trace.notices


@pytest.mark.parametrize("name", FIXTURES)
def test_cut_at_many_offsets(name):
    data = intact(name)
    ends = event_ends(data)
    full = decode_trace(data, name)
    assert full.event_count == len(ends)
    cuts = {int(len(data) * f) + d for f in FRACTIONS for d in (-7, 0, 13)}
    for cut in sorted(cuts):
        assert_salvaged(decode_trace(data[:cut], name), full, complete_before(ends, cut))


def special_cuts(data: bytes) -> dict[str, int]:
    """Cuts at the places a writer dies in: inside a string, inside args, between events, in the
    keys after the event list, one byte short of the end."""
    mid = len(data) // 2
    name_value = data.index(b'"name": "', mid) + len(b'"name": "') + 3
    args = data.index(b'"args": {', mid) + len(b'"args": {') + 5
    number = data.index(b'"dur": ', mid) + len(b'"dur": ') + 2
    between = data.index(b"},", mid) + 2
    after_list = data.rindex(b"]") + 3
    return {"inside a string": name_value, "inside args": args, "inside a number": number,
            "between events": between, "after the event list": after_list, "one byte short": len(data) - 1,
            "right after the first event": event_ends(data)[0]}


@pytest.mark.parametrize("where", ["inside a string", "inside args", "inside a number", "between events",
                                   "after the event list", "one byte short", "right after the first event"])
def test_cut_at_the_usual_places(where):
    data = intact("seed_mm64_cold")
    cut = special_cuts(data)[where]
    ends = event_ends(data)
    trace = decode_trace(data[:cut], "t")
    assert_salvaged(trace, decode_trace(data, "t"), complete_before(ends, cut))
    # what Kineto writes before the events survives the cut
    assert trace.device_properties and trace.device_properties[0]["name"] == "NVIDIA H200"
    assert trace.base_time_ns == json.loads(data)["baseTimeNanoseconds"]


def test_cut_before_the_first_event_is_an_error():
    data = intact("seed_mm64_cold")
    first = event_ends(data)[0]
    for cut in (10, data.index(b"traceEvents") + 20, first - 1):
        with pytest.raises(BadTrace, match="cut off before the first complete event"):
            decode_trace(data[:cut], "t")


@pytest.mark.parametrize("fraction", [0.3, 0.7, 0.99])
def test_a_cut_off_gzip(tmp_path, fraction):
    data = intact("series_linear_train")
    packed = gzip.compress(data)
    cut = packed[: int(len(packed) * fraction)]
    # what the standard library gets out of the same cut stream
    readable = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(cut)
    expected = complete_before(event_ends(data), len(readable))
    path = tmp_path / "cut.json.gz"
    path.write_bytes(cut)
    trace = load_trace(path)
    assert trace.event_count == expected > 0
    assert any("gzip stream is cut off" in n for n in trace.notices)
    assert any("cut off mid-write" in n for n in trace.notices)


def test_a_salvaged_trace_is_analyzed(tmp_path, capsys):
    data = intact("series_linear_train")
    path = tmp_path / "cut.json"
    path.write_bytes(data[: int(len(data) * 0.6)])
    analysis = analyze(load_trace(path))
    assert analysis.facts.has_gpu and analysis.summary is not None
    assert any("cut off" in n for n in analysis.notices)
    for verb in ("table", "analyze"):
        assert main([verb, str(path)]) == 0
        err = capsys.readouterr().err.splitlines()
        assert len(err) == 1 and err[0].startswith(f"pista: notice: {path}: the file is cut off")


def test_damage_in_the_middle_costs_only_the_damaged_events():
    data = bytearray(intact("seed_mm64_cold"))
    ends = event_ends(bytes(data))
    # break two events: a brace and a quote replaced by junk
    first = data.index(b'"ts"', ends[50]) - 1
    second = data.index(b'"name"', ends[150])
    data[first] = ord("#")
    data[second] = ord("#")
    trace = decode_trace(bytes(data), "t")
    assert trace.event_count == len(ends) - 2
    assert any("skipped 2 malformed event(s)" in n for n in trace.notices)
    assert not any("cut off" in n for n in trace.notices)
    assert trace.metadata.get("traceName")  # the keys after the list are still read


def test_a_big_real_trace_cut_off():
    """The 64 MB trace, which the streamed reader takes when intact, cut at 99.9%."""
    data = intact("big_gpt_eager_20steps")
    cut = int(len(data) * 0.999)
    trace = decode_trace(data[:cut], "big")
    assert trace.event_count == complete_before(event_ends(data), cut) > 190_000
    assert any("cut off" in n for n in trace.notices)


@pytest.mark.parametrize("junk", [b"\n}}\x00junk", b"\n{\"traceEvents\": []}", b"]"])
def test_junk_after_a_complete_trace(junk):
    data = intact("seed_mm64_cold")
    trace = decode_trace(data + junk, "t")
    assert trace.event_count == len(event_ends(data))
    assert trace.metadata["traceName"] == json.loads(data)["traceName"]
    assert f"ignored {len(junk.strip())} byte(s) of junk after the end of the trace" in trace.notices


def test_keys_with_objects_after_the_event_list():
    """A writer that puts deviceProperties (a list of objects) after the events: the objects there
    are not taken for events, whether the file is damaged or cut in those keys."""
    doc = json.loads(intact("seed_mm64_cold"))
    events = doc.pop("traceEvents")
    data = json.dumps({"schemaVersion": 1, "traceEvents": events, **doc}, indent=1).encode()
    damaged = data.replace(b'"ph": "X"', b'"ph": X', 1)  # breaks the first event only
    trace = decode_trace(damaged, "t")
    assert trace.event_count == len(events) - 1
    assert trace.device_properties[0]["name"] == "NVIDIA H200"
    cut = decode_trace(data[: data.rindex(b"NVIDIA H200")], "t")
    assert cut.event_count == len(events) and not cut.device_properties
    assert any("after its event list" in n for n in cut.notices)
