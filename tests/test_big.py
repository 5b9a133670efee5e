"""The big-trace path end to end, on a trace made by bench/make_big_trace.py (a real trace's steps
repeated to ~30 MB): load_trace takes the streamed reader (two processes) and gives the same
table as the in-memory reader, the totals are the source's times the number of copies, and
args read back from byte offsets are the events' own."""

from __future__ import annotations

import gzip

import numpy as np
import pytest
from conftest import big_copy, fixture

from pista.table import build_table
from pista.trace import load, stream
from pista.trace.facts import derive
from pista.trace.load import decode_trace, load_trace, read_bytes

SOURCE = "series_mlp_eager"
# Past both thresholds: streamed (16 MB) and split over two processes (24 MB).
TARGET_BYTES = 30 << 20


@pytest.fixture(scope="module")
def big(tmp_path_factory):
    target = tmp_path_factory.mktemp("big") / "big.json"
    copies, written = big_copy(SOURCE, target, TARGET_BYTES)
    assert written >= TARGET_BYTES and target.stat().st_size == written
    return target, copies


def in_memory(path):
    data, notices = read_bytes(path)
    return decode_trace(data, str(path), notices)


def test_load_trace_streams_big_files(big):
    path, _ = big
    assert stream.unpacked_size(path) >= max(load.STREAM_MIN_BYTES, stream.PARALLEL_MIN_BYTES)
    trace = load_trace(path)
    assert isinstance(trace.raw_args, stream.OffsetArgs)


def test_same_table_as_the_in_memory_reader(big):
    path, _ = big
    streamed, whole = build_table(derive(load_trace(path))), build_table(derive(in_memory(path)))
    assert streamed.self_cpu_total_us == whole.self_cpu_total_us
    assert streamed.self_device_total_us == whole.self_device_total_us
    assert sorted(streamed.rows, key=lambda r: (r.name, r.device_type)) == \
        sorted(whole.rows, key=lambda r: (r.name, r.device_type))


def test_totals_scale_with_the_copies(big):
    path, copies = big
    source = build_table(derive(load_trace(fixture(SOURCE))))
    table = build_table(derive(load_trace(path)))
    assert copies > 1
    assert table.self_cpu_total_us == pytest.approx(copies * source.self_cpu_total_us, rel=1e-6)
    assert table.self_device_total_us == pytest.approx(copies * source.self_device_total_us, rel=1e-6)
    steps = derive(load_trace(path)).steps
    assert len(steps) == copies * len(derive(load_trace(fixture(SOURCE))).steps)


def test_sampled_args_match(big):
    path, _ = big
    streamed, whole = load_trace(path), in_memory(path)
    rng = np.random.default_rng(7)
    sample = rng.choice(len(whole), 400, replace=False).tolist()
    sample += np.flatnonzero(whole.category_mask({"kernel"}))[:50].tolist()
    for i in sample:
        assert streamed.args(i) == whole.args(i), i
    # the ids pista keeps as columns agree with the args read back
    kernels = np.flatnonzero(streamed.category_mask({"kernel"}))[-20:]
    for i in kernels.tolist():
        assert streamed.args(i)["correlation"] == streamed.correlation[i]
        assert streamed.args(i)["External id"] == streamed.external_id[i]


def test_gzipped_big_trace(big, tmp_path):
    path, _ = big
    packed = tmp_path / "big.json.gz"
    with open(path, "rb") as source, gzip.open(packed, "wb", compresslevel=1) as out:
        while block := source.read(1 << 22):
            out.write(block)
    trace = load_trace(packed)
    assert isinstance(trace.raw_args, stream.OffsetArgs) and trace.raw_args.gzipped
    plain = load_trace(path)
    for column in ("ts", "dur", "name", "external_id", "correlation"):
        assert np.array_equal(getattr(trace, column), getattr(plain, column))
    for i in (0, len(trace) // 2, len(trace) - 1):
        assert trace.args(i) == plain.args(i)
