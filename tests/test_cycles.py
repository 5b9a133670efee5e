"""`pista analyze DIR` on a folder that `torch.profiler.tensorboard_trace_handler` wrote: one process,
one file per profiler cycle (tests/fixtures/tensorboard_cycles, captured on an H200 with
schedule(wait=1, warmup=1, active=2, repeat=2)) is read as cycles of one run, not as ranks."""

from __future__ import annotations

import gzip
import json
import shutil

import pytest
from conftest import FIXTURES

from pista.cli import main
from pista.cycles import analyze_cycles, cycle_files, read_header
from pista.distributed import analyze_ranks
from pista.i18n import word

CYCLES = FIXTURES / "tensorboard_cycles"
FILES = sorted(CYCLES.iterdir())
REPEAT = 2  # schedule(..., repeat=2)


def _raw(path) -> dict:
    with gzip.open(path) as fh:
        return json.load(fh)


def _host_steps(doc: dict) -> list[dict]:
    """The ProfilerStep regions the host recorded (not their GPU mirrors)."""
    return [e for e in doc["traceEvents"] if e.get("ph") == "X" and e.get("cat") == "user_annotation"
            and str(e.get("name", "")).startswith("ProfilerStep#")]


def _start_ns(doc: dict) -> float:
    first = min(e["ts"] for e in doc["traceEvents"] if "ts" in e and e.get("ph") != "M")
    return doc.get("baseTimeNanoseconds", 0) + first * 1000


def _json(capsys, folder, *more: str) -> dict:
    assert main(["analyze", str(folder), "--format", "json", *more]) == 0
    return json.loads(capsys.readouterr().out)


def test_the_fixture_is_one_process_in_two_files():
    # what the test below relies on, from the files themselves: one pid in the handler's names, no ranks
    assert len(FILES) == REPEAT
    assert {f.name.split(".")[0] for f in FILES} == {"vm_546"}
    for f in FILES:
        doc = _raw(f)
        assert "distributedInfo" not in doc
        assert {e["pid"] for e in doc["traceEvents"] if e.get("cat") == "cpu_op"} == {546}


def test_a_handler_folder_is_cycles_in_time_order_and_no_ranks(capsys):
    out = _json(capsys, CYCLES)
    assert "ranks" not in out and "world_size" not in out
    assert out["schema_version"] == 2 and out["pista_version"] and out["folder"] == str(CYCLES)
    cycles = out["cycles"]
    assert len(cycles) == REPEAT
    raw = {str(f): _raw(f) for f in FILES}
    starts = [_start_ns(raw[c["path"]]) for c in cycles]
    assert starts == sorted(starts) and len(set(starts)) == REPEAT
    assert sorted(c["path"] for c in cycles) == sorted(raw)
    for c in cycles:
        steps = _host_steps(raw[c["path"]])
        assert c["summary"]["steps"] == len(steps) == 2  # active=2
        assert c["summary"]["step_numbers"] == sorted(int(e["name"].split("#")[1]) for e in steps)
        assert c["source"] == c["path"] and {"summary", "findings", "table"} <= set(c)
    # wait=1, warmup=1, active=2, then the same again: steps 2-3, then 6-7
    assert [c["summary"]["step_numbers"] for c in cycles] == [[2, 3], [6, 7]]
    (change,) = out["changes"]
    before, after = (c["summary"]["step_us"] for c in cycles)
    assert (change["from"], change["to"]) == (0, 1)
    assert change["step_us"]["from"] == before and change["step_us"]["to"] == after
    assert change["step_us"]["change"] == pytest.approx(after / before - 1)
    rules = [{f["rule"] for f in c["findings"]} for c in cycles]
    assert {a["rule"] for a in change["appeared"]} == rules[1] - rules[0]
    assert {v["rule"] for v in change["vanished"]} == rules[0] - rules[1]
    assert change["verdict"]["changed"] == (cycles[0]["summary"]["verdict"] != cycles[1]["summary"]["verdict"])


def test_each_cycle_is_the_single_file_analysis(capsys):
    out = _json(capsys, CYCLES)
    for c in out["cycles"]:
        alone = _json(capsys, c["path"])
        assert c["summary"] == alone["summary"]
        assert [f["rule"] for f in c["findings"]] == [f["rule"] for f in alone["findings"]]


def test_the_text_shows_each_cycle_and_what_changed(capsys):
    from pista.i18n._fmt import sig3

    assert main(["analyze", str(CYCLES)]) == 0
    text = capsys.readouterr().out
    result = analyze_cycles(cycle_files(CYCLES), str(CYCLES))
    assert "rank" not in text
    assert "2 profiler cycles of one process (host vm, pid 546)" in text
    for n, cycle in enumerate(result.cycles, start=1):
        block = text[text.index(f"Cycle {n} "):]
        s = cycle.analysis.summary
        assert block.split("\n")[0].split()[-1] == cycle.path.rsplit("/", 1)[1]
        # three significant digits: the steps are a fraction of a millisecond, written in µs
        assert s.step_us < 1000
        assert f"{s.verdict}   median step {sig3(s.step_us)} µs   GPU busy {sig3(100 * s.gpu_busy_share)}%" in block
        assert f"Start here: {cycle.analysis.top_fix.fix_here}"[:30] in " ".join(block.split())
        f = cycle.analysis.findings[0]
        assert f"{f.rule} ({f.severity.value}, {sig3(100 * f.impact.share)}%)" in block
    change = result.changes[0]
    assert "What changed" in text
    sign = "+" if change.step_change >= 0 else ""
    assert f"Cycle 1 -> 2: median step {sig3(change.step_us_before)} µs -> " \
           f"{sig3(change.step_us_after)} µs ({sign}{sig3(100 * change.step_change)}%)" in text


def test_cycle_labels_in_spanish(capsys):
    assert main(["analyze", str(CYCLES), "--lang", "es"]) == 0
    text = capsys.readouterr().out
    for key in ("profiler cycles of one process", "in time order", "Cycle", "median step", "What changed",
                "verdict", "Start here", "GPU busy", "Findings"):
        assert word(key, "es") != key and word(key, "es") in text, key
    assert "Ciclo 1 -> 2: paso mediano" in text and "(aviso, " in text
    for english in ("Cycle ", "median step", "What changed", "Start here", "Findings", "warning", "in time order",
                    "per cycle"):
        assert english not in text, english
    out = _json(capsys, CYCLES, "--lang", "es")
    top = out["cycles"][0]["summary"]["top_fix"]
    assert top["text"] == _json(capsys, out["cycles"][0]["path"], "--lang", "es")["summary"]["top_fix"]["text"]


@pytest.mark.parametrize("folder", ["gloo/balanced_2", "gloo/straggler_4", "nccl/world_1"])
def test_rank_folders_stay_ranks(capsys, folder):
    assert cycle_files(FIXTURES / folder) is None
    out = _json(capsys, FIXTURES / folder, "--workers", "1")
    assert "cycles" not in out and len(out["ranks"]) == out["world_size"] >= 1


def test_the_pid_comes_from_the_events_without_the_handler_names(tmp_path, capsys):
    for n, f in enumerate(FILES):
        shutil.copy(f, tmp_path / f"cycle_{n}.json.gz")
    headers = cycle_files(tmp_path)
    assert headers is not None and {(h.pid, h.pid_from, h.host) for h in headers} == {(546, "events", None)}
    assert len(_json(capsys, tmp_path)["cycles"]) == REPEAT


def test_the_pid_of_the_handler_name_where_the_events_say_nothing(tmp_path):
    doc = _raw(FILES[0])
    doc["traceEvents"] = [e for e in doc["traceEvents"] if e.get("cat") not in ("cpu_op", "user_annotation",
                                                                                   "cuda_runtime", "cuda_driver")
                          and e.get("name") != "process_labels"]
    (tmp_path / "box_77.123.pt.trace.json").write_text(json.dumps(doc))
    h = read_header(tmp_path / "box_77.123.pt.trace.json")
    assert (h.pid, h.pid_from, h.host, h.name_ns) == (77, "file name", "box", 123)


def test_one_pid_with_two_ranks_is_ranks(tmp_path, capsys):
    # the same pid in both files, but distributedInfo names ranks 0 and 1: a job, not cycles
    for rank in (0, 1):
        with gzip.open(FIXTURES / "gloo" / "balanced_2" / f"rank-{rank}.json.gz") as fh:
            text = fh.read().decode()
        (tmp_path / f"worker.{rank}.json").write_text(text.replace('"pid": 13007', '"pid": 13006'))
    assert {read_header(p).pid for p in tmp_path.iterdir()} == {13006}
    assert cycle_files(tmp_path) is None
    assert [r["rank"] for r in _json(capsys, tmp_path, "--workers", "1")["ranks"]] == [0, 1]


def test_rank_names_and_other_pids_are_ranks(tmp_path, capsys):
    for n, f in enumerate(FILES):  # one process's files, named as ranks by whoever saved them
        shutil.copy(f, tmp_path / f"rank-{n}.json.gz")
    assert cycle_files(tmp_path) is None
    for p in tmp_path.iterdir():
        p.unlink()
    shutil.copy(FIXTURES / "seed_mm64_warm.json.gz", tmp_path / "a.json.gz")  # pid 457
    shutil.copy(FILES[0], tmp_path / "b.json.gz")  # pid 546
    assert cycle_files(tmp_path) is None
    assert "ranks" in _json(capsys, tmp_path, "--workers", "1")


def test_one_file_or_one_trace_twice_is_not_cycles(tmp_path):
    shutil.copy(FILES[0], tmp_path / FILES[0].name)
    assert cycle_files(tmp_path) is None
    shutil.copy(FILES[0], tmp_path / "copy.json.gz")  # the same trace_id: a copy, not another cycle
    assert cycle_files(tmp_path) is None
    assert {read_header(p).trace_id for p in FILES} == {_raw(p)["trace_id"] for p in FILES}


def test_a_stray_json_beside_the_cycles_is_skipped_with_a_notice(tmp_path, capsys):
    # a config file beside the handler's output: the folder is no longer one process's traces, so it
    # goes the way a folder of ranks goes, which skips a file that is no trace and says so
    for f in FILES:
        shutil.copy(f, tmp_path / f.name)
    (tmp_path / "config.json").write_text(json.dumps({"lr": 0.1, "batch": 64}))
    assert read_header(tmp_path / "config.json").pid is None
    assert cycle_files(tmp_path) is None
    result = analyze_ranks(tmp_path, engine="inline")
    assert len(result.ranks) == len(FILES)
    assert any(str(tmp_path / "config.json") in n and "not a chrome trace" in n for n in result.notices)
    assert main(["analyze", str(tmp_path), "--workers", "1", "--format", "json"]) == 0
    assert str(tmp_path / "config.json") in capsys.readouterr().out


def test_rank_options_on_cycles_say_they_do_nothing(capsys):
    out = _json(capsys, CYCLES, "--workers", "3")
    assert any("--workers" in n for n in out["notices"])
    assert not _json(capsys, CYCLES)["notices"]


def test_no_table_is_accepted_on_cycles(capsys):
    # the cycles report has no op table: --no-table asks for what it gives (a folder of ranks refuses it)
    assert main(["analyze", str(CYCLES), "--no-table"]) == 0
    assert "Cycle 2" in capsys.readouterr().out


def test_a_folder_of_one_trace_reads_as_that_trace(tmp_path, capsys):
    # tensorboard_trace_handler's folder after one cycle: analyzed as a one-rank distributed job before
    import shutil

    first = sorted(CYCLES.iterdir())[0]
    shutil.copy(first, tmp_path / first.name)
    folder = _json(capsys, tmp_path)
    alone = _json(capsys, first)
    assert folder.pop("source") == str(tmp_path / first.name) and alone.pop("source") == str(first)
    assert folder == alone and "ranks" not in folder
    assert main(["analyze", str(tmp_path)]) == 0
    text = capsys.readouterr().out
    assert "rank" not in text and text.startswith(f"pista: {tmp_path / first.name}")
