"""Fuzzing the loader and `analyze` with mutated real traces: byte flips, cuts, spliced junk,
fields and args swapped for random JSON values, the whole gzipped and cut.

The property: a Trace (and then an Analysis) comes back, or a `PistaError` with a one-line message;
never any other exception. The streamed reader (pista.trace.stream, for big files), forced onto the
same inputs in small blocks, must give what the in-memory reader gives: the same trace or the same
error. `tests/fuzz_long.py` runs the same strategies for as long as you like.
"""

from __future__ import annotations

import contextlib
import gzip
import json
import os
import tempfile
from collections.abc import Iterator
from functools import cache

import numpy as np
from conftest import fixture
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_stream import assert_same

from pista.analysis import analyze
from pista.errors import PistaError
from pista.render import json as json_render
from pista.table import render_text
from pista.trace import load, stream
from pista.trace.load import MAX_TIME_US, decode_trace

SEEDS = ("seed_mm64_warm", "seed_mm64_cold", "gpu/pageable_memcpy", "seed_mm4096_compile")
EVENT_FIELDS = ("ph", "cat", "name", "pid", "tid", "ts", "dur", "id", "args", "s", "bp")
ARG_KEYS = ("External id", "external id", "correlation", "stream", "device", "name", "Input Dims")
# Budget for CI: the whole module takes about 25 s on one core of a shared 2-core runner.
CI_EXAMPLES = 4000
CI = settings(max_examples=CI_EXAMPLES, deadline=None, database=None, derandomize=True,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@cache
def seed_bytes(name: str) -> bytes:
    return gzip.decompress(fixture(name).read_bytes())


@cache
def seed_doc(name: str) -> dict:
    return json.loads(seed_bytes(name))


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(2**80), max_value=2**80)
    | st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=6,
)


# Values of the right type that analysis has to make sense of: steps, odd phases, colliding ids,
# zero and huge durations, times out of order.
PLAUSIBLE = {
    "ph": st.sampled_from(["X", "i", "M", "s", "f", "C", "B", "E", "", "XX"]),
    "cat": st.sampled_from(["cpu_op", "kernel", "gpu_memcpy", "gpu_memset", "cuda_runtime", "cuda_driver",
                            "user_annotation", "gpu_user_annotation", "python_function", "overhead", "ac2g",
                            "Kernel", "Runtime", "Operator", "Trace", ""]),
    "name": st.sampled_from(["ProfilerStep#1", "ProfilerStep#2", "ProfilerStep#x", "aten::mm", "cudaLaunchKernel",
                             "cuLaunchKernelEx", "cudaDeviceSynchronize", "cudaMemcpyAsync", "aten::item",
                             "aten::copy_", "Memcpy HtoD (Pageable -> Device)", "", "process_name",
                             "thread_name", "nccl:all_reduce", "ncclKernel_AllReduce"]),
    "pid": st.sampled_from([0, 1, -1, 457, "Spans", "", "0"]) | st.integers(-5, 5),
    "tid": st.sampled_from([0, 7, 457, "stream 7", "", "PyTorch Profiler"]) | st.integers(-5, 5),
    "ts": st.floats(-1e6, 1e13, allow_nan=False) | st.integers(0, 10**13),
    "dur": st.sampled_from([0, 0.001, 1e9]) | st.floats(0, 1e7, allow_nan=False),
    "id": st.integers(-3, 3),
    "args": st.fixed_dictionaries({}, optional={"External id": st.integers(-2, 600),
                                                "correlation": st.integers(-2, 2000),
                                                "stream": st.integers(-2, 20), "device": st.integers(-2, 8),
                                                "name": st.text(max_size=8), "bytes": st.integers(0, 2**40)}),
}


@st.composite
def byte_mutations(draw: st.DrawFn, data: bytes) -> bytes:
    buf = bytearray(data)
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["flip", "cut", "splice", "delete", "junk_byte"]))
        if not buf:
            break
        # a fraction, not a byte index: hypothesis favours small integers, and the start of a trace
        # is only its header
        at = min(len(buf) - 1, int(draw(st.floats(0, 1)) * len(buf)))
        if kind == "flip":
            buf[at] ^= 1 << draw(st.integers(0, 7))
        elif kind == "cut":
            del buf[at:]
        elif kind == "splice":
            buf[at:at] = draw(st.sampled_from([b"{", b"}", b"[", b"]", b",", b'"', b"\\", b"NaN", b"N/A",
                                               b"-inf", b"\xff", b"\x00", b'"traceEvents": [', b"1e999"]))
        elif kind == "delete":
            del buf[at : at + draw(st.integers(1, 64))]
        else:
            buf[at] = draw(st.sampled_from(b'{}[],:"\\ \n0-.eE'))
    return bytes(buf)


@st.composite
def field_mutations(draw: st.DrawFn, name: str) -> bytes:
    doc = seed_doc(name)
    events = list(doc["traceEvents"])
    for _ in range(draw(st.integers(1, 6))):
        i = draw(st.integers(0, len(events) - 1))
        event = dict(events[i]) if isinstance(events[i], dict) else {}
        target = draw(st.sampled_from(["field", "plausible", "plausible", "arg", "drop", "event", "copy"]))
        if target == "field":
            event[draw(st.sampled_from(EVENT_FIELDS))] = draw(json_values)
        elif target == "plausible":
            key = draw(st.sampled_from(sorted(PLAUSIBLE)))
            event[key] = draw(PLAUSIBLE[key])
        elif target == "copy":  # the same event twice: duplicate ids, same-time siblings
            events.insert(i, dict(event))
        elif target == "arg":
            args = dict(event["args"]) if isinstance(event.get("args"), dict) else {}
            args[draw(st.sampled_from(ARG_KEYS))] = draw(json_values)
            event["args"] = args
        elif target == "drop" and event:
            event.pop(draw(st.sampled_from(sorted(event))))
        events[i] = event if target != "event" else draw(json_values)
    top = {**doc, "traceEvents": events}
    if draw(st.booleans()):
        top[draw(st.sampled_from(["deviceProperties", "distributedInfo", "baseTimeNanoseconds", "traceName"]))] = \
            draw(json_values)
    return json.dumps(top, allow_nan=True, indent=draw(st.sampled_from([None, 1, 2]))).encode()


@st.composite
def mutated_traces(draw: st.DrawFn) -> bytes:
    name = draw(st.sampled_from(SEEDS))
    how = draw(st.sampled_from(["bytes", "fields", "both", "gzip"]))
    if how == "bytes":
        return draw(byte_mutations(seed_bytes(name)))
    if how == "fields":
        return draw(field_mutations(name))
    if how == "both":
        return draw(byte_mutations(draw(field_mutations(name))))
    packed = gzip.compress(draw(field_mutations(name)), compresslevel=1)
    return draw(byte_mutations(packed))


def check_load(data: bytes):
    """Decode; returns the Trace, or None after checking the refusal is a proper one-line error."""
    try:
        trace = decode_trace(_maybe_gunzip(data), "fuzz.json")
    except PistaError as err:
        assert_one_line(err)
        return None
    n = len(trace)
    for column in ("ph", "cat", "name", "pid", "tid", "ts", "dur", "external_id", "correlation", "stream",
                   "device", "flow_id"):
        assert getattr(trace, column).shape == (n,), column
    assert len(trace.raw_args) == trace.event_count  # by file row, the flow events' too
    assert (trace.dur >= 0).all()
    assert (np.abs(trace.ts) <= MAX_TIME_US * 1000).all()
    assert all("\n" not in notice for notice in trace.notices)
    return trace


def check_analyze(trace) -> None:
    try:
        analysis = analyze(trace)
    except PistaError as err:
        assert_one_line(err)
        return
    json_render.render(analysis)
    render_text(analysis.table, "cuda_time_total", 25, has_device=analysis.facts.has_gpu)


def assert_one_line(err: PistaError) -> None:
    message = str(err)
    assert message and "\n" not in message, repr(message)
    assert err.exit_code == 2


def _maybe_gunzip(data: bytes) -> bytes:
    """What read_bytes does with a file's bytes (the gzip part), without a file."""
    import os
    import tempfile

    from pista.trace.load import read_bytes

    if data[:2] != b"\x1f\x8b":
        return data
    with tempfile.NamedTemporaryFile(suffix=".json.gz", delete=False) as handle:
        handle.write(data)
    try:
        return read_bytes(handle.name)[0]
    finally:
        os.unlink(handle.name)


def fuzz_one(data: bytes) -> None:
    """The property, for one input (also what tests/fuzz_long.py calls)."""
    try:
        trace = check_load(data)
    except PistaError as err:  # read_bytes refused the gzip
        assert_one_line(err)
        return
    if trace is not None:
        check_analyze(trace)


@contextlib.contextmanager
def forced_stream(block: int, parallel: bool) -> Iterator[None]:
    """Every file through the streamed reader, in blocks of `block` bytes, in two processes or one."""
    saved = load.STREAM_MIN_BYTES, stream.BLOCK_BYTES, stream.PARALLEL_MIN_BYTES
    load.STREAM_MIN_BYTES, stream.BLOCK_BYTES = 0, block
    stream.PARALLEL_MIN_BYTES = 0 if parallel else 1 << 60
    try:
        yield
    finally:
        load.STREAM_MIN_BYTES, stream.BLOCK_BYTES, stream.PARALLEL_MIN_BYTES = saved


def _read(path: str):
    try:
        return load.load_trace(path)
    except PistaError as err:
        assert_one_line(err)
        return str(err)


def fuzz_streamed(data: bytes, block: int, parallel: bool) -> None:
    """The property of the streamed reader, for one input (also what tests/fuzz_long.py calls): the
    in-memory reader's trace or error, whatever the blocks; then the analysis of that trace."""
    with tempfile.NamedTemporaryFile(suffix=".json.gz" if data[:2] == b"\x1f\x8b" else ".json",
                                     delete=False) as handle:
        handle.write(data)
    try:
        saved = load.STREAM_MIN_BYTES
        load.STREAM_MIN_BYTES = 1 << 60
        try:
            expected = _read(handle.name)
        finally:
            load.STREAM_MIN_BYTES = saved
        with forced_stream(block, parallel):
            got = _read(handle.name)
        if isinstance(expected, str) or isinstance(got, str):
            assert got == expected
            return
        assert_same(expected, got)
        check_analyze(got)
    finally:
        os.unlink(handle.name)


@CI
@given(mutated_traces())
def test_mutated_real_traces(data):
    fuzz_one(data)


# Budget for CI: ~20 s more on the shared 2-core runner (tests/fuzz_long.py --streamed for long runs).
STREAMED_CI_EXAMPLES = 500
STREAM_BLOCKS = st.sampled_from([61, 509, 4096, 1 << 20])


@settings(CI, max_examples=STREAMED_CI_EXAMPLES)
@given(mutated_traces(), STREAM_BLOCKS, st.booleans())
def test_mutated_real_traces_streamed(data, block, parallel):
    fuzz_streamed(data, block, parallel)


@settings(CI, max_examples=3000)
@given(st.binary(max_size=2048))
def test_arbitrary_bytes(data):
    fuzz_one(data)


@settings(CI, max_examples=1000)
@given(json_values)
def test_arbitrary_json_documents(value):
    fuzz_one(json.dumps(value, allow_nan=True).encode())
    fuzz_one(json.dumps({"traceEvents": value}, allow_nan=True).encode())
