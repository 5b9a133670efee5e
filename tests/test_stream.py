"""The streamed reader against the in-memory one: the same columns, names, metadata and args for
documents shaped to trip a block scanner (braces and escaped quotes inside strings, events cut
by block boundaries, odd whitespace, metadata after the event list), and the in-memory loader's
handling for files the streamed reader declines."""

from __future__ import annotations

import json
import os
from typing import Any

import msgspec
import numpy as np
import pytest
from conftest import fixture
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pista.errors import BadTrace
from pista.trace import load, stream
from pista.trace.load import decode_trace, read_bytes

COLUMNS = ("ph", "cat", "name", "pid", "tid", "ts", "dur", "external_id", "correlation", "stream", "device",
           "flow_id")


def in_memory(path):
    data, notices = read_bytes(path)
    return decode_trace(data, str(path), notices)


def assert_same(a, b):
    assert len(a) == len(b)
    for column in COLUMNS:
        x, y = getattr(a, column), getattr(b, column)
        assert x.dtype == y.dtype, column
        assert np.array_equal(x, y), column
    assert a.flows.keys() == b.flows.keys()  # the flow events, out of the columns, the same in both
    for column, x in a.flows.items():
        y = b.flows[column]
        assert x.dtype == y.dtype and np.array_equal(x, y), column
    assert np.array_equal(a.file_rows(), b.file_rows())
    assert a.names == b.names
    assert a.categories == b.categories
    assert a.metadata == b.metadata
    assert a.string_ids == b.string_ids
    assert a.process_names == b.process_names
    assert a.thread_names == b.thread_names
    assert a.notices == b.notices
    assert a.size_bytes == b.size_bytes
    for i in range(len(a)):
        assert a.args(i) == b.args(i), i
    # the bulk read (blocks of events, windows of blocks) gives what each event's own read gives
    everything = list(range(len(a)))[::-1]
    bulk = [None if x is None else (x.external_id, bytes(x.dims)) for x in a.decode_args(everything, _Some)]
    assert bulk == [None if x is None else (x.external_id, bytes(x.dims)) for x in b.decode_args(everything, _Some)]


class _Some(msgspec.Struct):
    external_id: Any = msgspec.field(name="External id", default=None)
    dims: msgspec.Raw = msgspec.field(name="Input Dims", default=msgspec.Raw(b"null"))


@pytest.fixture
def tiny_blocks(monkeypatch):
    """Blocks of a few dozen bytes, so events straddle block ends everywhere; two processes even
    for tiny files."""
    monkeypatch.setattr(stream, "BLOCK_BYTES", 61)
    monkeypatch.setattr(stream, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr(stream, "ARGS_BLOCK", 3)  # args read back across many blocks and windows
    monkeypatch.setattr(stream, "READ_WINDOW", 100)


def event(k: int, **extra) -> dict:
    e = {"ph": "X", "cat": "cpu_op", "name": f"aten::op{k % 3}", "pid": 7, "tid": 8, "ts": 1000.5 + k,
         "dur": 0.25, "args": {"External id": k, "Input Dims": [[k, 2], []]}}
    e.update(extra)
    return e


TRICKY = [
    event(0, name='has "quotes" and }, { braces'),
    event(1, args={"External id": 1, "note": "back\\slash\\\\", "nested": {"a": [{"b": "}]"}]}}),
    event(2, name="ends with backslash \\"),
    {"ph": "f", "id": 3, "pid": 7, "tid": 8, "ts": 1002.0, "cat": "fwdbwd", "name": "fwdbwd", "bp": "e"},
    {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1003.0, "dur": 2.0,
     "args": {"External id": 2, "correlation": 99, "stream": 7, "device": 0, "grid": [1, 1, 1]}},
    {"name": "thread_name", "ph": "M", "pid": 7, "tid": 8, "args": {"name": "thread 8 (main)"}},
    {"name": "process_name", "ph": "M", "pid": 7, "tid": 0, "args": {"name": "python3"}},
    {"ph": "X", "cat": "Trace", "ts": 1000.0, "dur": 10.0, "pid": "Spans", "tid": "PyTorch Profiler",
     "name": "PyTorch Profiler (0)", "args": {"Op count": 0}},
    {"ph": "i", "s": "g", "pid": "", "tid": "", "ts": 1009.0, "name": "Record Window End"},
    event(9, pid="457", name="é ünïcode ✓"),
]


def write_document(path, events, separator=",\n  ", head_keys=True, tail_keys=True):
    parts = ["{"]
    if head_keys:
        parts.append('"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "GPU"}], ')
    parts.append('"traceEvents": [\n  ' + separator.join(json.dumps(e) for e in events) + "\n]")
    if tail_keys:
        parts.append(', "traceName": "x.json", "distributedInfo": {"rank": 3}')
    parts.append("}")
    path.write_text("".join(parts))
    return path


@pytest.mark.parametrize("separator", [",\n  ", ",", " , ", ",\n"])
def test_tricky_events_read_the_same(tmp_path, tiny_blocks, separator):
    path = write_document(tmp_path / "t.json", TRICKY * 3, separator)
    for workers in (1, 2):
        streamed = stream.load_streamed(path, workers=workers)
        assert streamed is not None
        assert_same(in_memory(path), streamed)


def test_blocks_past_64_kib_keep_their_events_apart(tmp_path):
    """An event's start within its block is 2 bytes only while every block fits in 64 KiB: a block
    holding a 70 KB event keeps 4, and every event's args still read back."""
    wide = event(4, args={"External id": 4, "Input Dims": [[7] * 23000]})
    path = write_document(tmp_path / "t.json", TRICKY + [wide] + TRICKY)
    streamed = stream.load_streamed(path, workers=1)
    assert streamed.raw_args.within.dtype == np.uint32
    assert_same(in_memory(path), streamed)
    assert stream.load_streamed(write_document(tmp_path / "s.json", TRICKY * 2), workers=1).raw_args.within.dtype \
        == np.uint16


def test_uneven_whitespace_and_bare_list(tmp_path, tiny_blocks):
    events = [json.dumps(e) for e in TRICKY * 2]
    text = "[" + "".join(e + ("," + " " * (k % 4) + "\n" * (k % 2) if k < len(events) - 1 else "")
                         for k, e in enumerate(events)) + "]"
    path = tmp_path / "list.json"
    path.write_text(text)
    assert_same(in_memory(path), stream.load_streamed(path, workers=2))


def test_gzip_reads_args_back_from_an_unpacked_copy(tmp_path, tiny_blocks):
    import gzip

    plain = write_document(tmp_path / "t.json", TRICKY * 4)
    packed = tmp_path / "t.json.gz"
    packed.write_bytes(gzip.compress(plain.read_bytes()))
    streamed = stream.load_streamed(packed)
    assert isinstance(streamed.raw_args, stream.OffsetArgs) and streamed.raw_args.gzipped
    assert_same(in_memory(packed), streamed)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(names=st.lists(st.text(alphabet='ab{}[],:"\\ \n\té', max_size=12), min_size=1, max_size=25),
       block=st.integers(min_value=7, max_value=200))
def test_any_names_read_the_same(tmp_path, monkeypatch, names, block):
    monkeypatch.setattr(stream, "BLOCK_BYTES", block)
    monkeypatch.setattr(stream, "PARALLEL_MIN_BYTES", 0)
    path = write_document(tmp_path / "h.json", [event(k, name=n) for k, n in enumerate(names)])
    streamed = stream.load_streamed(path, workers=2)
    assert streamed is not None
    assert_same(in_memory(path), streamed)


def test_real_fixture_reads_the_same(tiny_blocks, monkeypatch):
    monkeypatch.setattr(stream, "BLOCK_BYTES", 4096)
    path = fixture("series_linear_train")
    assert_same(in_memory(path), stream.load_streamed(path))


# -- what the streamed reader declines goes to the in-memory loader -------------------------


@pytest.fixture
def always_stream(monkeypatch):
    monkeypatch.setattr(load, "STREAM_MIN_BYTES", 0)
    monkeypatch.setattr(stream, "BLOCK_BYTES", 61)


def test_cut_off_file_is_salvaged_as_before(tmp_path, always_stream):
    whole = write_document(tmp_path / "w.json", TRICKY * 3, tail_keys=False).read_bytes()
    cut = tmp_path / "cut.json"
    cut.write_bytes(whole[: int(len(whole) * 0.7)])
    trace = load.load_trace(cut)
    assert isinstance(trace.raw_args, stream.OffsetArgs)  # salvaged streamed (issue 38 item 7)
    expected = in_memory(cut)
    assert trace.notices == expected.notices and any("cut off" in n for n in trace.notices)
    assert len(trace) == len(expected) > 0
    assert_same(expected, trace)


def test_wrong_field_types_are_skipped_as_before(tmp_path, always_stream):
    events = TRICKY + [event(20, ts="soon"), event(21, args={"External id": "x"})]
    path = write_document(tmp_path / "bad.json", events)
    assert stream.load_streamed(path) is None
    trace = load.load_trace(path)
    assert trace.notices == in_memory(path).notices and trace.notices
    assert_same(in_memory(path), trace)


def test_bad_times_are_counted_as_before(tmp_path, always_stream):
    path = write_document(tmp_path / "nan.json", TRICKY + [event(30, dur=-5.0)])
    assert_same(in_memory(path), load.load_trace(path))
    assert load.load_trace(path).notices


@pytest.mark.parametrize("content", [b"", b"   \n", b"not json", b'{"foo": 1}', b'{"traceEvents": []}'])
def test_bad_inputs_keep_their_one_line_errors(tmp_path, always_stream, content):
    path = tmp_path / "x.json"
    path.write_bytes(content)
    with pytest.raises(BadTrace) as streamed_err:
        load.load_trace(path)
    with pytest.raises(BadTrace) as memory_err:
        in_memory(path)
    assert str(streamed_err.value) == str(memory_err.value)
    assert "\n" not in str(streamed_err.value)


def test_an_overlong_digit_string_pid_is_one_lane_on_both_paths(tmp_path, always_stream):
    # beyond int64 as digits: its own lane in memory, lane -1 on the streamed path before
    events = TRICKY + [event(40, pid="123456789012345678901234", tid="99999999999999999999"),
                       event(41, pid="123456789012345678901234", tid="-00000000000000000007"),
                       {"ph": "s", "id": "77777777777777777777777", "pid": 7, "tid": 8, "ts": 1003.0,
                        "cat": "ac2g", "name": "ac2g"}]
    path = write_document(tmp_path / "long_pid.json", events * 3)
    trace = load.load_trace(path)
    assert isinstance(trace.raw_args, stream.OffsetArgs)  # read streamed
    assert_same(in_memory(path), trace)
    assert "123456789012345678901234" in trace.string_ids


@pytest.mark.parametrize("layout", ["two keys", "nested decoy", "decoy in a string"])
def test_the_event_list_is_the_one_the_in_memory_reader_takes(tmp_path, always_stream, layout):
    # the streamed reader took the first "traceEvents" it saw, the in-memory one the document's last
    decoy = json.dumps([event(k, name="decoy") for k in range(4)])
    real = json.dumps(TRICKY * 2)
    text = {"two keys": f'{{"traceEvents": {decoy}, "traceName": "x", "traceEvents": {real}}}',
            "nested decoy": f'{{"x": {{"traceEvents": {decoy}}}, "traceEvents": {real}}}',
            # a key that ends in "traceEvents" (after an escaped quote) holds the text "traceEvents"
            "decoy in a string": f'{{"\\"traceEvents": {decoy}, "traceEvents": {real}}}'}[layout]
    path = tmp_path / "keys.json"
    path.write_text(text)
    expected = in_memory(path)
    assert "decoy" not in expected.names
    assert_same(expected, load.load_trace(path))


@pytest.mark.parametrize("last", ['"a string"', "5", "[]", "null"])
def test_an_entry_that_is_no_event_after_the_last_one_is_counted_as_before(tmp_path, always_stream, last):
    # found by the streamed fuzz run: the streamed reader read past it silently, the in-memory one
    # counts it as a skipped entry
    path = tmp_path / "tail.json"
    path.write_text('{"traceEvents": [' + ", ".join(json.dumps(e) for e in TRICKY) + ", " + last + "]}")
    expected = in_memory(path)
    assert any("skipped 1 malformed" in n for n in expected.notices)
    assert_same(expected, load.load_trace(path))


def _columns_in_a_worker(path):
    trace = stream.load_streamed(path, workers=2)
    return None if trace is None else (trace.ts.tolist(), trace.names)


def test_a_pool_worker_reads_in_one_process(tmp_path, tiny_blocks):
    """Per-rank analysis loads traces in daemonic pool workers, which may not start processes."""
    import multiprocessing

    path = write_document(tmp_path / "t.json", TRICKY * 3)
    with multiprocessing.get_context("fork").Pool(1) as pool:
        got = pool.apply(_columns_in_a_worker, (path,))
    expected = in_memory(path)
    assert got == (expected.ts.tolist(), expected.names)


def test_nested_objects_laid_out_like_events_fall_back_to_msgspec(tmp_path, monkeypatch):
    # json.dumps(indent=0) puts every object at a line start: inside args too, a list of objects
    # is separated by "},\n{" exactly as the events are
    monkeypatch.setattr(stream, "BLOCK_BYTES", 200)  # a few events per block
    monkeypatch.setattr(stream, "PARALLEL_MIN_BYTES", 0)
    listed = event(5, args={"External id": 5, "inputs": [{"shape": [2, 3]}, {"shape": [4]}, {"x": {}}]})
    events = [event(k) for k in range(40)] + [listed] * 5 + TRICKY * 2
    path = tmp_path / "indent0.json"
    path.write_text(json.dumps({"traceEvents": events, "traceName": "x"}, indent=0))
    assert "},\n{" in path.read_text().split('"inputs"')[1]
    mismatches = []
    real = stream._decode_run

    def spy(*args):
        try:
            return real(*args)
        except stream._CountMismatch:
            mismatches.append(1)
            raise

    monkeypatch.setattr(stream, "_decode_run", spy)
    for workers in (1, 2):
        streamed = stream.load_streamed(path, workers=workers)
        assert streamed is not None
        assert_same(in_memory(path), streamed)
    assert mismatches  # the separator path was fooled, and its run was read again


def test_kineto_layout_takes_the_separator_path(monkeypatch):
    calls = []
    real = stream._separator_offsets
    monkeypatch.setattr(stream, "_separator_offsets", lambda *a: calls.append(r := real(*a)) or r)
    streamed = stream.load_streamed(fixture("big_gpt_eager_20steps"), workers=1)
    assert streamed is not None and any(c is not None for c in calls)
    assert_same(in_memory(fixture("big_gpt_eager_20steps")), streamed)


def _load_or_error(path):
    try:
        return load.load_trace(path)
    except BadTrace as err:
        return str(err)


@pytest.fixture(scope="module")
def kineto_bytes() -> bytes:
    with open(fixture("seed_mm64_cold"), "rb") as handle:
        import gzip

        return gzip.decompress(handle.read())


JUNK = st.sampled_from([b"x", b"\xff", b"\x00", b'"', b"{", b"}", b"[", b"]", b",", b"\\", b"\n", b" "])


@settings(max_examples=150, deadline=None, database=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(start=st.floats(0, 1), length=st.integers(1, 80), junk=st.lists(JUNK, min_size=1, max_size=8),
       how=st.sampled_from(["overwrite", "insert", "delete", "cut"]), block=st.sampled_from([200, 4096]),
       window=st.sampled_from([97, 4 << 20]))
def test_damage_anywhere_reads_as_the_careful_loader_reads_it(tmp_path_factory, monkeypatch, kineto_bytes,
                                                              start, length, junk, how, block, window):
    # the streamed reader (two processes, small blocks; the streamed salvage's window small or not) on
    # a damaged real trace: it must give exactly what the in-memory loader gives (events, notices) or
    # hand the file over to it
    data = kineto_bytes
    at = int(start * (len(data) - 1))
    filler = (b"".join(junk) * length)[:length]
    damaged = {"overwrite": data[:at] + filler + data[at + length:], "insert": data[:at] + filler + data[at:],
               "delete": data[:at] + data[at + length:], "cut": (data[:at] + filler)[: at + length // 8]}[how]
    path = tmp_path_factory.mktemp("damage") / "t.json"
    path.write_bytes(damaged)
    monkeypatch.setattr(load, "STREAM_MIN_BYTES", 1 << 40)
    expected = _load_or_error(path)
    monkeypatch.setattr(load, "STREAM_MIN_BYTES", 0)
    monkeypatch.setattr(stream, "BLOCK_BYTES", block)
    monkeypatch.setattr(stream, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr(stream, "SALVAGE_READ_BYTES", window)
    got = _load_or_error(path)
    if isinstance(expected, str):
        assert got == expected
    else:
        assert_same(expected, got)


def _damaged_copies(data: bytes) -> dict[str, bytes]:
    mid = len(data) // 2
    dur = data.index(b'"dur": ', mid) + len(b'"dur": ')
    name = data.index(b'"name": "', mid) + len(b'"name": ')
    copies = {f"cut at {f:.1%}": data[: int(len(data) * f)] for f in (0.1, 0.5, 0.9, 0.999)}
    copies.update({
        "a bad value": data[:dur] + b"x" + data[dur + 1 :],
        "a quote taken out": data[:name] + data[name + 1 :],
        "a value of the wrong type": data[:dur] + b'"1' + data[dur + 1 :].replace(b",", b'",', 1),
        "a negative duration": data[:dur] + b"-" + data[dur:],
        "junk after the end": data + b"garbage12345",
        "a bad value, then cut": (data[:dur] + b"x" + data[dur + 1 :])[: int(len(data) * 0.9)],
        "a bad value, then junk": data[:dur] + b"x" + data[dur + 1 :] + b"]]",
    })
    return copies


@pytest.mark.parametrize("damage", list(_damaged_copies(b'"traceEvents": ' + b'"dur": 1, "name": "x"' * 3)))
@pytest.mark.parametrize("window", [97, 4 << 20])
def test_damage_inside_the_event_list_is_salvaged_streamed(tmp_path, monkeypatch, kineto_bytes, damage, window):
    # read whole in memory before: a 560 MB trace cut off at 90% took 2.4 GiB (issue 38 item 7)
    path = tmp_path / "t.json"
    path.write_bytes(_damaged_copies(kineto_bytes)[damage])
    expected = in_memory(path)
    assert expected.notices
    monkeypatch.setattr(load, "STREAM_MIN_BYTES", 0)
    monkeypatch.setattr(stream, "BLOCK_BYTES", 997)
    monkeypatch.setattr(stream, "SALVAGE_READ_BYTES", window)
    trace = load.load_trace(path)
    assert isinstance(trace.raw_args, stream.OffsetArgs)
    assert_same(expected, trace)


@pytest.mark.parametrize("mended", ["a bare NaN", "bytes that are not UTF-8", "a block of NULs",
                                    "a list among the events, not cut"])
def test_damage_the_in_memory_reader_mends_first_is_left_to_it(tmp_path, always_stream, kineto_bytes, mended):
    # it reads the file otherwise (mended, its zeroed blocks counted, or valid JSON with an entry that
    # is no event, which it counts): the streamed reader hands it over
    data = kineto_bytes
    args = data.index(b'"args": {', len(data) // 2) + len(b'"args": {')
    between = data.index(b"},", len(data) // 2) + 2
    damaged = {"a bare NaN": data[:args] + b'"x": NaN, ' + data[args:],
               "bytes that are not UTF-8": data[:args] + b'"x": "\xff", ' + data[args:],
               "a block of NULs": data[:args] + b"\x00" * 40 + data[args:],
               "a list among the events, not cut": data[:between] + b' [{"a": 1}], ' + data[between:]}[mended]
    path = tmp_path / "t.json"
    path.write_bytes(damaged if mended.endswith("not cut") else damaged[: int(len(damaged) * 0.9)])
    assert stream.load_streamed(path) is None
    assert_same(in_memory(path), load.load_trace(path))


@settings(max_examples=300, deadline=None, derandomize=True)
@given(data=st.lists(st.sampled_from([b",", b"[", b"{", b"}", b" ", b"\n", b"\t", b"\x0b", b"\x0c", b"a", b" " * 9]),
                     max_size=40).map(b"".join), lo=st.integers(0, 40), hi=st.integers(0, 400))
def test_the_streamed_salvage_finds_the_pieces_the_in_memory_one_does(data, lo, hi):
    lo, hi = min(lo, len(data)), min(max(lo, hi), len(data))
    seps, starts = stream._piece_starts(data, lo, hi)
    assert list(zip(seps.tolist(), starts.tolist(), strict=True)) == \
        [(m.start(), m.end()) for m in load._EVENT_START.finditer(data, lo, hi)]


def _die(source, split):
    os._exit(9)  # like the kernel's OOM killer: no result, no traceback


def test_a_reader_child_that_dies_is_replaced_by_a_read_here(tmp_path, tiny_blocks, monkeypatch):
    path = write_document(tmp_path / "t.json", TRICKY * 3)
    monkeypatch.setattr(stream, "_child_read", _die)
    assert_same(in_memory(path), stream.load_streamed(path, workers=2))


def test_the_progress_bar_starts_no_thread(tmp_path, tiny_blocks, monkeypatch):
    """The read forks while the bar is up; a refresh thread holding the console's lock then would
    leave the child waiting on it."""
    import threading

    path = write_document(tmp_path / "t.json", TRICKY * 3)
    monkeypatch.setattr(stream, "PROGRESS_MIN_BYTES", 0)
    monkeypatch.setattr(stream, "PROGRESS_AFTER_S", 0.0)
    monkeypatch.setattr(stream.sys.stderr, "isatty", lambda: True)
    children = []
    real_fork = stream.forked.fork_call
    monkeypatch.setattr(stream.forked, "fork_call", lambda *a: children.append(real_fork(*a)) or children[-1])
    before = threading.active_count()
    assert_same(in_memory(path), stream.load_streamed(path, workers=2))
    assert len(children) == 1 and children[0] is not None, "the read did not fork"
    assert threading.active_count() == before


_FREED_5_MIB = """
import sys
import numpy as np
from pista.allocator import map_big_arrays
def resident():
    return int(open("/proc/self/statm").read().split()[1]) * 4096
np.ones(20 << 20, dtype=np.uint8)  # freed at once: glibc raises its own bound to 20 MiB
if sys.argv[1] == "mapped":
    map_big_arrays()
keep = np.ones(1 << 10, dtype=np.uint8)  # so the heap's top is not where the array goes
array = np.ones(5 << 20, dtype=np.uint8)
after = np.ones(1 << 10, dtype=np.uint8)  # nor just below it
before = resident()
del array
print(before - resident())
"""


def _glibc_as_shipped() -> bool:
    import platform

    tuned = os.environ.get("GLIBC_TUNABLES") or any(k.startswith("MALLOC_") for k in os.environ)
    return os.path.exists("/proc/self/statm") and platform.libc_ver()[0] == "glibc" and not tuned


@pytest.mark.skipif(not _glibc_as_shipped(), reason="glibc's allocator with its default settings only")
def test_the_command_line_hands_big_arrays_back(tmp_path):
    """After map_big_arrays (what the CLI calls before reading a trace), a freed 5 MiB array leaves
    the process's resident memory; without it glibc serves it from the heap once a bigger block was
    freed, and its pages stay."""
    import subprocess
    import sys

    def given_back(mode: str) -> int:
        out = subprocess.run([sys.executable, "-c", _FREED_5_MIB, mode], capture_output=True, text=True,
                             check=True).stdout
        return int(out.split()[0])

    assert given_back("mapped") >= 5 << 20
    assert given_back("heap") < 1 << 20


def test_a_flow_event_carrying_ids_reads_the_same_both_ways(tmp_path, tiny_blocks):
    """A flow event with an External id and a correlation (a damaged file can merge one into the
    runtime call before it): both readers keep its ids, in columns of the same width."""
    carrying = {"ph": "f", "id": 5, "pid": 7, "tid": 8, "ts": 1004.0, "cat": "ac2g", "name": "ac2g", "bp": "e",
                "args": {"External id": 4, "correlation": 1137}}
    path = write_document(tmp_path / "t.json", TRICKY + [carrying] + TRICKY)
    streamed = stream.load_streamed(path, workers=2)
    assert streamed.flows["external_id"].tolist() == [-1, 4, -1] and streamed.flows["correlation"].tolist()[1] == 1137
    assert_same(in_memory(path), streamed)


def _rules_read_matches(full, lean):
    """A read for the rules alone: every column the same but the events view's, which are a constant
    NO_ID taking no memory, in the columns and in the flows."""
    assert len(full) == len(lean)
    for column in COLUMNS:
        x, y = getattr(full, column), getattr(lean, column)
        if column in stream.EVENTS_VIEW_ONLY:
            assert y.strides == (0,) and y.shape == x.shape and (y == -1).all(), column
            assert y.base is not None and y.base.size == 1, column  # a view of one value, not an array of -1
            continue
        assert x.dtype == y.dtype and np.array_equal(x, y), column
    for column, x in full.flows.items():
        y = lean.flows[column]
        assert y.shape == x.shape, column
        assert np.array_equal(x, y) or (column in stream.EVENTS_VIEW_ONLY and (y == -1).all()), column
    assert full.names == lean.names and full.notices == lean.notices and full.thread_names == lean.thread_names
    # flow ids are numbered after every pid and tid: leaving them unread renumbers no lane
    assert {k: v for k, v in full.string_ids.items() if k in lean.string_ids} == lean.string_ids


def test_a_read_for_the_rules_leaves_out_only_the_events_view_columns(tmp_path, tiny_blocks):
    odd = [{"ph": "s", "id": "77777777777777777777777", "pid": 7, "tid": 8, "ts": 1003.0, "cat": "ac2g",
            "name": "ac2g"}, {"ph": "f", "id": "a string", "pid": 7, "tid": 8, "ts": 1004.0, "cat": "ac2g",
                              "name": "ac2g", "bp": "e"}]
    path = write_document(tmp_path / "t.json", TRICKY + odd + TRICKY)
    for workers in (1, 2):
        full = stream.load_streamed(path, workers=workers)
        assert full.flow_id.strides != (0,) or not (full.flow_id != -1).any()
        _rules_read_matches(full, stream.load_streamed(path, workers=workers, events_view=False))
    real = fixture("seed_mm64_cold")
    _rules_read_matches(stream.load_streamed(real), stream.load_streamed(real, events_view=False))


@pytest.mark.parametrize("field", ["stream", "device"])
def test_an_args_id_past_int64_goes_to_the_in_memory_loader_even_unread(tmp_path, always_stream, field):
    """The in-memory loader notes such an id and drops it: a read that leaves the column out still
    sends the file there, so its notice is the same whichever verb reads it."""
    kernel = {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1003.0, "dur": 2.0,
              "args": {"External id": 2, "correlation": 99, field: 2**63}}
    path = write_document(tmp_path / "big_id.json", TRICKY + [kernel])
    assert stream.load_streamed(path, events_view=False) is None
    lean, full = load.load_trace(path, events_view=False), load.load_trace(path)
    assert lean.notices == full.notices and any("overflow int64" in n for n in full.notices)
    assert_same(full, lean)
