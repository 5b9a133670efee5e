"""The rebuilt key_averages table against the table torch printed for the same profile."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from conftest import FIXTURES, H200_TRACES, fixture
from torch_table import parse_table

from pista.table import _fit, build_table, format_memory, render_text

TOP_ROWS = 12
# Profiles recorded with profile_memory=True: torch prints CPU Mem / Self CPU Mem / CUDA Mem / Self
# CUDA Mem columns.
MEMORY_PROFILES = ["gpu/host_sync_item_stack", "gpu/run_mlp_stack", "gpu/memory_leak", "gpu/memory_steady"]


def close(a: float, b: float, rel: float = 0.01, abs_us: float = 0.05) -> bool:
    return abs(a - b) <= max(rel * abs(b), abs_us)


def test_python_frames_are_not_rows_nor_host_time(load_facts):
    # with_stack=True: torch's table leaves the python_function frames out; pista's 4.878 ms of
    # summed self times were the frames counted on top of the ops (4.152 ms as torch printed)
    facts = load_facts("gpu/host_sync_item_stack")
    table = build_table(facts)
    frames = {facts.trace.event_name(i) for i in range(len(facts.trace))
              if facts.trace.cat[i] == facts.trace.category_id("python_function")}
    assert frames and not frames & {r.name for r in table.rows}
    assert close(table.self_cpu_total_us, parse_table(FIXTURES / "gpu/host_sync_item_stack.table.txt")
                 .self_cpu_total_us, abs_us=1.0)


def test_fixtures_are_there():
    assert len(H200_TRACES) >= 10


@pytest.mark.parametrize("name", H200_TRACES)
def test_totals_match_torch(name, load_facts):
    torch_table = parse_table(FIXTURES / (name + ".table.txt"))
    table = build_table(load_facts(name))
    assert close(table.self_cpu_total_us, torch_table.self_cpu_total_us, abs_us=1.0)
    if torch_table.self_device_total_us is None:  # a CPU-only profile prints no CUDA columns
        assert table.self_device_total_us == 0
    else:
        assert close(table.self_device_total_us, torch_table.self_device_total_us, abs_us=1.0)


@pytest.mark.parametrize("name", H200_TRACES)
def test_top_rows_match_torch(name, load_facts):
    torch_table = parse_table(FIXTURES / (name + ".table.txt"))
    torch_rows = torch_table.rows[:TOP_ROWS]
    has_device = torch_table.self_device_total_us is not None
    sort_by = "cuda_time_total" if has_device else "self_cpu_time_total"
    totals = [r.cpu_total_us for r in torch_table.rows]
    if not has_device and totals == sorted(totals, reverse=True):
        sort_by = "cpu_time_total"  # pista run on the CPU prints torch's table by CPU total
    ours = build_table(load_facts(name)).sorted(sort_by, TOP_ROWS + 4)
    unmatched = list(ours)
    for expected in torch_rows:
        match = next((r for r in unmatched if _fit(r.name) == expected.name and r.calls == expected.calls
                      and close(r.self_cpu_us, expected.self_cpu_us)
                      and close(r.cpu_total_us, expected.cpu_total_us)
                      and (not has_device or (close(r.self_device_us, expected.self_device_us)
                                                and close(r.device_total_us, expected.device_total_us)))), None)
        assert match is not None, f"no pista row matches torch's {expected}"
        unmatched.remove(match)


OVERHEAD_ROWS = ("Activity Buffer Request", "Lazy Function Loading", "Runtime Triggered Module Loading")


@pytest.mark.parametrize("name", [n for n in H200_TRACES if "cold" in n or "window_sync" in n])
def test_overhead_rows_carry_the_device_time_torch_gives_them(name, load_facts):
    # torch charges an overhead activity the kernels of the op it interrupted: a row with
    # microseconds of "CUDA" time although no device event in the file belongs to it
    printed = {r.name: r for r in parse_table(FIXTURES / (name + ".table.txt")).rows if r.name in OVERHEAD_ROWS}
    assert printed, f"{name}: torch printed no overhead row"
    table = build_table(load_facts(name))
    for expected in printed.values():
        ours = table.row(expected.name)
        assert ours is not None and ours.calls == expected.calls
        assert close(ours.self_device_us, expected.self_device_us), (ours, expected)
        assert close(ours.device_total_us, expected.device_total_us), (ours, expected)


def test_ranking_follows_torch_on_the_big_trace(load_facts):
    name = "big_gpt_eager_20steps"
    torch_names = [r.name for r in parse_table(FIXTURES / (name + ".table.txt")).rows]
    ours = [_fit(r.name) for r in build_table(load_facts(name)).sorted("cuda_time_total", len(torch_names))]
    assert ours == torch_names


def test_text_layout_is_torchs(load_facts):
    text = render_text(build_table(load_facts("seed_mm64_warm")), "cuda_time_total", 25)
    lines = text.splitlines()
    assert lines[1].split() [:3] == ["Name", "Self", "CPU"]
    assert lines[-2] == "Self CPU time total: 509.956us"
    assert lines[-1] == "Self CUDA time total: 11.872us"


@pytest.mark.parametrize("name", H200_TRACES)
def test_frame_is_torchs_character_for_character(load_facts, name):
    torch_lines = (FIXTURES / (name + ".table.txt")).read_text().splitlines()
    facts = load_facts(name)
    ours = render_text(build_table(facts), "cuda_time_total", 25, has_device=facts.has_gpu).splitlines()
    assert ours[:3] == torch_lines[:3]


@pytest.mark.parametrize("name", MEMORY_PROFILES)
def test_memory_columns_are_torchs(load_facts, name):
    # every printed row's four memory cells, formatted as torch formats bytes
    torch_table = parse_table(FIXTURES / (name + ".table.txt"))
    assert all(len(r.memory) == 4 for r in torch_table.rows)
    rows = build_table(load_facts(name)).sorted("cuda_time_total")
    for expected in torch_table.rows:
        candidates = [r for r in rows if _fit(r.name) == expected.name and r.calls == expected.calls]
        assert any(tuple(format_memory(b) for b in (r.cpu_mem, r.self_cpu_mem, r.device_mem, r.self_device_mem))
                   == expected.memory for r in candidates), expected


def test_memory_sums_the_memory_events_inside_each_call(load_facts):
    # independent of torch's printout: train_step's CUDA Mem is the bytes of the [memory] events on the
    # device inside its calls' spans, from the raw JSON
    import raw
    events = raw.events("gpu/memory_leak")
    calls = [(e["ts"], e["ts"] + e["dur"]) for e in events if e.get("name") == "train_step" and e.get("ph") == "X"]
    memory = [e for e in events if e.get("name") == "[memory]"]
    expected = sum(m["args"]["Bytes"] for m in memory if m["args"].get("Device Type") == 1
                   and any(s <= m["ts"] <= end for s, end in calls))
    row = build_table(load_facts("gpu/memory_leak")).row("train_step")
    assert expected > 0 and row.device_mem == expected


def test_no_memory_columns_without_memory_events(load_facts):
    text = render_text(build_table(load_facts("seed_mm64_warm")), "cuda_time_total", 5)
    assert "Mem" not in text


def test_short_names_narrow_the_name_column_as_torch_does(tmp_path):
    torch = pytest.importorskip("torch")
    from torch.profiler import ProfilerActivity, profile

    x = torch.ones(8)
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for _ in range(3):
            x + x  # noqa: B018
    trace = tmp_path / "short.json"
    prof.export_chrome_trace(str(trace))
    printed = prof.key_averages().table(sort_by="cpu_time_total").splitlines()
    from pista.trace.facts import derive
    from pista.trace.load import load_trace

    facts = derive(load_trace(trace))
    ours = render_text(build_table(facts), "cpu_time_total", 25, has_device=facts.has_gpu).splitlines()
    assert len(printed[0]) < 100  # the name column shrank below torch's 55
    assert ours[:3] == printed[:3]
    assert [line.split()[0] for line in ours[3:-2]] == [line.split()[0] for line in printed[3:-2]]


def test_profiler_step_rows_fold(load_facts):
    table = build_table(load_facts("seed_mm64_warm"))
    step = table.row("ProfilerStep*")
    assert step is not None and step.calls == 3
    assert not any(r.name.startswith("ProfilerStep#") for r in table.rows)


def test_sort_and_limit(load_facts):
    table = build_table(load_facts("series_mlp_eager"))
    rows = table.sorted("count", 5)
    assert len(rows) == 5
    assert [r.calls for r in rows] == sorted((r.calls for r in rows), reverse=True)
    assert rows[0].calls == max(r.calls for r in table.rows)


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pista", *args], capture_output=True, text=True, timeout=300)


def test_cli_table_json():
    out = run_cli("table", str(fixture("seed_mm4096_compile")), "--format", "json", "--row-limit", "3")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert close(data["self_cpu_total_us"], 1298.0, abs_us=1.0)
    assert close(data["self_device_total_us"], 528.322)
    assert len(data["rows"]) == 3
    assert {"name", "self_cpu_us", "cpu_total_us", "self_device_us", "device_total_us", "calls"} <= set(data["rows"][0])
    assert data["rows"][0]["name"].startswith("## Call CompiledFxGraph")


def test_cli_table_text_sort_by_self_cpu():
    out = run_cli("table", str(fixture("seed_mm64_warm")), "--sort-by", "self_cpu_time_total", "--row-limit", "2")
    assert out.returncode == 0, out.stderr
    body = out.stdout.splitlines()[3:5]
    assert body[0].split()[0] == "aten::mm"  # 155.7 µs self CPU, torch's largest
    assert "Self CPU time total: 509.956us" in out.stdout


GROUPED = [("gpu/cpu_grouped", "shapes", {"group_by_input_shape": True}),
           ("gpu/gpu_grouped", "shapes", {"group_by_input_shape": True}),
           ("gpu/gpu_grouped", "stack", {"group_by_stack_n": 5})]


@pytest.mark.parametrize(("name", "kind", "group"), GROUPED)
def test_grouped_tables_are_torchs(load_facts, name, kind, group):
    # key_averages(group_by_input_shape=True) / (group_by_stack_n=5), as torch printed them: the frame
    # line for line, and every printed row found among pista's with its shapes or frames
    path = FIXTURES / f"{name}.{kind}.table.txt"
    torch_table = parse_table(path)
    facts = load_facts(name)
    sort_by = "cuda_time_total" if facts.has_gpu else "self_cpu_time_total"
    table = build_table(facts, **group)
    ours = render_text(table, sort_by, 25, has_device=facts.has_gpu).splitlines()
    assert ours[:3] == path.read_text().splitlines()[:3]
    assert any(r.input_shapes for r in torch_table.rows) or any(r.stack for r in torch_table.rows)
    width = len(path.read_text().splitlines()[0].rstrip().split()[-1])  # the last column's dashes

    def printed(frame: str) -> str:  # torch keeps a long frame's end behind "..."
        return frame if len(frame) <= width else "..." + frame[len(frame) - width + 3:]

    for expected in torch_table.rows:
        assert any(_fit(r.name) == expected.name and r.calls == expected.calls
                   and (r.input_shapes or "[]") == (expected.input_shapes or "[]")
                   and [printed(f) for f in r.stack] == expected.stack
                   and close(r.self_cpu_us, expected.self_cpu_us) and close(r.device_total_us, expected.device_total_us)
                   for r in table.rows), expected


def test_grouping_by_shape_splits_calls_by_their_input_dims(load_facts):
    # independent of torch: aten::addmm's calls per distinct Input Dims, from the raw JSON
    import collections

    import raw
    counts = collections.Counter(str(e["args"]["Input Dims"]) for e in raw.complete("gpu/cpu_grouped", "cpu_op")
                                 if e["name"] == "aten::addmm")
    rows = [r for r in build_table(load_facts("gpu/cpu_grouped"), group_by_input_shape=True).rows
            if r.name == "aten::addmm"]
    assert len(counts) > 1 and {r.input_shapes: r.calls for r in rows} == dict(counts)


def test_grouping_by_stack_without_call_stacks_uses_the_python_frames(load_facts):
    # gpu/host_sync_item_stack has python_function events but no `Call stack` args (torch itself
    # groups nothing there): pista groups by the enclosing frames; every aten::item is under read_loss
    import raw
    items = raw.complete("gpu/host_sync_item_stack", "cpu_op", "aten::item")
    rows = [r for r in build_table(load_facts("gpu/host_sync_item_stack"), group_by_stack_n=2).rows
            if r.name == "aten::item"]
    assert [r.calls for r in rows] == [len(items)]
    assert "read_loss" in rows[0].stack[1] and len(rows[0].stack) == 2


@pytest.mark.parametrize("name", H200_TRACES)
def test_no_row_has_a_negative_self_cpu_unless_torch_printed_one(load_facts, name):
    # issue "Reliability" item 1: exact times must not misplace a child past its parent's end
    torch_negative = {r.name for r in parse_table(FIXTURES / (name + ".table.txt")).rows if r.self_cpu_us < 0}
    ours = [r.name for r in build_table(load_facts(name)).rows if r.self_cpu_us < 0]
    assert {_fit(n) for n in ours} <= torch_negative
