"""Derived facts on real traces: op tree, steps, launch <-> kernel links, GPU busy time."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest


def test_op_tree_self_times(load_facts):
    facts = load_facts("seed_mm64_warm")
    trace = facts.trace
    names = trace.name_array[trace.name]
    mm = np.flatnonzero(names == "aten::mm")[0]
    matmul = facts.parent[mm]
    assert trace.event_name(matmul) == "aten::matmul"
    kids = facts.children(matmul)
    assert facts.self_time[matmul] == trace.dur[matmul] - trace.dur[kids].sum()
    assert facts.depth[mm] == facts.depth[matmul] + 1
    assert facts.self_time.dtype == np.int32  # every self time fits


def test_a_self_time_past_int32_keeps_its_value():
    """Self times are int32 where all fit; one longer than 2**31 ns (2.1 s) keeps the column int64."""
    from pista.trace.facts import derive
    from pista.trace.load import decode_trace

    def op(name, ts_us, dur_us):
        return {"ph": "X", "cat": "cpu_op", "name": name, "pid": 1, "tid": 1, "ts": ts_us, "dur": dur_us}

    events = [op("outer", 0, 5_000_000), op("inner", 1_000_000, 500_000)]
    facts = derive(decode_trace(json.dumps({"traceEvents": events}).encode()))
    assert facts.self_time.dtype == np.int64
    assert facts.self_time.tolist() == [4_500_000_000, 500_000_000]


def test_steps(load_facts):
    facts = load_facts("big_gpt_eager_20steps")
    assert [s.number for s in facts.steps] == list(range(2, 22))
    assert all(a.end <= b.start for a, b in zip(facts.steps, facts.steps[1:], strict=False))
    kernels = np.flatnonzero(facts.is_device_work)
    assert (facts.event_step[kernels] >= 0).mean() > 0.99


def test_every_kernel_links_to_its_launch(load_facts):
    facts = load_facts("series_mlp_eager")
    kernels = np.flatnonzero(facts.is_device_work & facts.trace.category_mask({"kernel"}))
    launch = facts.launcher[kernels]
    assert (launch >= 0).all()
    assert (facts.trace.correlation[launch] == facts.trace.correlation[kernels]).all()
    assert (facts.trace.ts[launch] <= facts.trace.ts[kernels]).all()  # launched before it ran


def test_gpu_busy_is_union_of_device_work(load_facts):
    facts = load_facts("seed_mm4096_warm")
    busy = facts.gpu_busy[0]
    work = facts.trace.dur[facts.is_device_work].sum()
    assert 0 < busy.total <= work
    assert (busy.end[:-1] < busy.start[1:]).all()


def test_no_steps_trace(load_facts):
    facts = load_facts("seed_mm4096_compile_cold")
    assert facts.steps == []
    lo, hi = facts.window
    assert hi > lo


def _torch_stack_nesting(ts, end, new_lane):
    """torch's own nesting (profiler_util._populate_cpu_children), written as the stack it uses."""
    parent, depth, stack = [-1] * len(ts), [0] * len(ts), []
    for pos in range(len(ts)):
        if new_lane[pos]:
            stack = []
        while stack and (ts[pos] >= end[stack[-1]] or end[pos] > end[stack[-1]]):
            stack.pop()
        if stack:
            parent[pos], depth[pos] = stack[-1], len(stack)
        stack.append(pos)
    return parent, depth


def test_vectorised_nesting_is_torchs_stack():
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from pista.trace.facts import _nest

    interval = st.tuples(st.integers(0, 3), st.integers(0, 60), st.integers(0, 25))

    @settings(max_examples=300, deadline=None)
    @given(st.lists(interval, min_size=1, max_size=60))
    def check(events):
        # lane, start, -end order, as _op_tree sorts; zero durations and partial overlaps included
        rows = sorted((lane, start, -(start + dur)) for lane, start, dur in events)
        lane = np.array([r[0] for r in rows])
        ts = np.array([r[1] for r in rows], dtype=np.int64)
        end = np.array([-r[2] for r in rows], dtype=np.int64)
        new_lane = np.r_[True, lane[1:] != lane[:-1]]
        parent, depth = _nest(ts, end, new_lane)
        want_parent, want_depth = _torch_stack_nesting(ts.tolist(), end.tolist(), new_lane.tolist())
        assert parent.tolist() == want_parent and depth.tolist() == want_depth

    check()


def test_negative_timestamps_keep_the_same_facts(tmp_path, load_facts):
    """Times before the epoch (a clock offset, a hand-made trace) shift everything, change nothing."""
    import gzip
    import json

    from conftest import fixture

    from pista.analysis import summarize
    from pista.table import build_table
    from pista.trace.facts import derive
    from pista.trace.load import load_trace

    doc = json.loads(gzip.decompress(fixture("seed_mm64_warm").read_bytes()))
    shift = max(float(e.get("ts", 0)) + float(e.get("dur", 0)) for e in doc["traceEvents"]) + 1e6
    for e in doc["traceEvents"]:
        if "ts" in e:
            e["ts"] = float(e["ts"]) - shift
    doc.pop("baseTimeNanoseconds", None)
    path = tmp_path / "negative.json"
    path.write_text(json.dumps(doc))
    shifted = derive(load_trace(path))
    original = load_facts("seed_mm64_warm")
    assert int(shifted.trace.ts.max()) < 0
    assert shifted.gpu_busy[0].total == original.gpu_busy[0].total
    s, o = (summarize(f, build_table(f)) for f in (shifted, original))
    assert s.gpu_busy_share == pytest.approx(o.gpu_busy_share) and s.gpu_busy_share <= 1
    assert s.verdict == o.verdict


def test_ids_past_int32_link_as_narrow_ones_do(load_facts, tmp_path):
    """Columns are int32 only when every value fits: shift the ids of a real trace past 2**32 and the
    launches, owners and op tree found are the same events."""
    import gzip
    import json

    from conftest import fixture

    from pista.trace.facts import derive
    from pista.trace.load import load_trace

    doc = json.loads(gzip.decompress(fixture("series_mlp_eager").read_bytes()))
    shift = 2**33
    for event in doc["traceEvents"]:
        args = event.get("args") or {}
        for key in ("correlation", "External id"):
            if isinstance(args.get(key), int):
                args[key] += shift
        if isinstance(event.get("pid"), int) and event["pid"] >= 0:
            event["pid"] += shift
    path = tmp_path / "wide.json"
    path.write_text(json.dumps(doc))
    narrow, wide = load_facts("series_mlp_eager"), derive(load_trace(path))
    assert narrow.trace.correlation.dtype == np.int32 and narrow.trace.pid.dtype == np.int32
    assert wide.trace.correlation.dtype == np.int64 and wide.trace.pid.dtype == np.int64
    assert (narrow.launcher >= 0).sum() > 100
    for column in ("launcher", "owner", "parent", "depth", "self_time"):
        assert np.array_equal(getattr(narrow, column), getattr(wide, column)), column


def test_threads_whose_ids_share_their_low_32_bits_nest_apart(tmp_path):
    """Two threads of one process, tids 7 and 7 + 2**32: an op on the second, inside the first's
    span, is no child of the first's op (each thread nests on its own, as torch does)."""
    import json

    from pista.trace.facts import derive
    from pista.trace.load import load_trace

    events = [{"ph": "X", "cat": "cpu_op", "name": "aten::outer", "pid": 1, "tid": 7, "ts": 0, "dur": 100},
              {"ph": "X", "cat": "cpu_op", "name": "aten::elsewhere", "pid": 1, "tid": 7 + 2**32, "ts": 10,
               "dur": 20},
              {"ph": "X", "cat": "cpu_op", "name": "aten::inner", "pid": 1, "tid": 7, "ts": 40, "dur": 30}]
    path = tmp_path / "wide_tids.json"
    path.write_text(json.dumps({"traceEvents": events}))
    facts = derive(load_trace(path))
    assert facts.parent.tolist() == [-1, -1, 0]
    assert facts.self_time.tolist() == [70_000, 20_000, 30_000]


def test_clip_by_bisection_is_the_clip_of_every_interval():
    from pista.trace.facts import merge_intervals

    rng = np.random.default_rng(7)
    start = rng.integers(-1000, 100_000, 3000)
    iv = merge_intervals(start, start + rng.integers(0, 400, start.size))
    for lo, hi in [(-5000, -10), (-50, 30), (0, 100_000), (5000, 5001), (7777, 54321), (99_000, 200_000), (10, 5)]:
        s, e = np.clip(iv.start, lo, hi), np.clip(iv.end, lo, hi)
        got = iv.clip(lo, hi)
        assert np.array_equal(got.start, s[e > s]) and np.array_equal(got.end, e[e > s]), (lo, hi)


@pytest.mark.parametrize("name", ["big_gpt_eager_20steps", "gpu/adamw_foreach", "gpu/capture_mm4096_compile"])
def test_interval_algebra_on_a_real_trace_is_the_step_by_step_one(name):
    """Intersect (by bisection) and subtract of the GPU's busy time and the host ops' spans, against
    a walk over the two lists written out in Python (tests/raw.py); pieces that touch are one."""
    import raw
    from conftest import fixture

    from pista.rules import _idle
    from pista.trace.facts import derive
    from pista.trace.load import load_trace

    facts = derive(load_trace(fixture(name)))
    trace = facts.trace
    busy = max(facts.gpu_busy.values(), key=lambda b: b.total)
    ops = np.flatnonzero(facts.is_host & trace.category_mask({"cpu_op"}))
    spans = _idle.spans(facts, ops)
    expected_spans = raw.merge(zip(trace.ts[ops].tolist(), (trace.ts[ops] + trace.dur[ops]).tolist(), strict=True))
    assert list(zip(spans.start.tolist(), spans.end.tolist(), strict=True)) == expected_spans
    listed = list(zip(busy.start.tolist(), busy.end.tolist(), strict=True))
    both = _idle.intersect(spans, busy)
    assert list(zip(both.start.tolist(), both.end.tolist(), strict=True)) == raw.merge(raw.intersect(expected_spans, listed))
    assert both.total > 0
    rest = _idle.subtract(spans, busy)
    assert list(zip(rest.start.tolist(), rest.end.tolist(), strict=True)) == raw.merge(raw.subtract(expected_spans, listed))


def test_a_kept_ancestor_answer_reads_back_as_computed():
    """nearest_ancestor keeps an answer only where few events have an ancestor, packed: asked again,
    it reads back the same answer as a climb up the parents gives; an answer most events have is not
    kept (the cache holds no array as long as the trace)."""
    from conftest import fixture

    from pista import query
    from pista.trace.facts import derive
    from pista.trace.load import load_trace

    facts = derive(load_trace(fixture("gpu/adamw_foreach")))
    trace = facts.trace
    steps = facts.is_host & query.pattern_mask(facts, re.compile(r"^Optimizer\.step"))
    ops = trace.category_mask({"cpu_op"})

    def climbed(mask: np.ndarray, i: int, inclusive: bool) -> int:
        k = i if inclusive else int(facts.parent[i])
        while k >= 0 and not mask[k]:
            k = int(facts.parent[k])
        return k

    for mask, inclusive, kept in ((steps, True, True), (ops, False, False)):
        first = query.nearest_ancestor(facts, mask, inclusive)
        again = query.nearest_ancestor(facts, mask, inclusive)
        assert np.array_equal(first, again)
        for i in np.linspace(0, len(trace) - 1, 400).astype(int).tolist():
            assert int(again[i]) == climbed(mask, i, inclusive)
        entries = query._ancestor_cache.get(facts, {}).values()
        assert all(len(hit) <= len(trace) // query.ANCESTOR_KEPT_SHARE for hit, _ in entries)
        assert (int((first >= 0).sum()) <= len(trace) // query.ANCESTOR_KEPT_SHARE) == kept
    assert (again >= 0).any() and (first >= 0).any()


def test_phases_hand_freed_memory_back_only_in_pistas_own_process_on_a_big_trace(monkeypatch):
    """After map_big_arrays (the command line), a phase's end trims the heap once the trace has
    TRIM_MIN_ROWS rows; in a user's process, or on a smaller trace, it does nothing."""
    from pista import allocator

    trims = []
    monkeypatch.setattr(allocator, "give_back_freed_memory", lambda: trims.append(1))
    monkeypatch.setattr(allocator, "_tuned", False)
    allocator.phase_done(allocator.TRIM_MIN_ROWS * 4)
    assert trims == []
    monkeypatch.setattr(allocator, "_tuned", True)
    allocator.phase_done(allocator.TRIM_MIN_ROWS - 1)
    assert trims == []
    allocator.phase_done(allocator.TRIM_MIN_ROWS)
    assert trims == [1]


def test_indices_list_a_masks_events_across_slices(monkeypatch):
    """facts.indices: the events of a real trace's masks, in order, as int32, whatever the slice."""
    from conftest import fixture

    from pista.trace import facts as facts_module
    from pista.trace.facts import derive
    from pista.trace.load import load_trace

    facts = derive(load_trace(fixture("gpu/capture_transformer")))
    for size in (7, 1000, 1 << 20):
        monkeypatch.setattr(facts_module, "INDICES_SLICE", size)
        for mask in (facts.is_host, facts.is_device_work, facts.parent >= 0, np.zeros(len(facts.trace), bool)):
            got = facts_module.indices(mask)
            assert got.dtype == np.int32 and got.tolist() == np.flatnonzero(mask).tolist()


def test_category_mask_is_each_events_category_in_the_set():
    """Trace.category_mask against each event's own category name, for sets of one to all of the
    trace's categories (compared one by one up to FEW_CATEGORIES, through a table past it), a name
    the trace lacks, and a subset of rows."""
    from conftest import fixture

    from pista.trace.load import load_trace

    trace = load_trace(fixture("gpu/capture_transformer"))
    names = np.asarray(trace.categories, dtype=object)[trace.cat.astype(np.int64)]
    assert len(trace.categories) > 5
    for k in range(1, len(trace.categories) + 1):
        wanted = frozenset(trace.categories[:k]) | {"no such category"}
        expected = np.fromiter((n in wanted for n in names), dtype=bool, count=names.size)
        assert trace.category_mask(wanted).tolist() == expected.tolist()
        rows = np.arange(0, names.size, 3)
        assert trace.category_mask(wanted, rows).tolist() == expected[rows].tolist()
