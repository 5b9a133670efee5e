"""Capture on the CPU: `pista run` of each workload, the session API, `pista profile`, `pista sweep`.

Every run is checked against torch itself: the `Self CPU time total` torch printed at capture must
come back (within 1%) from `pista table` over the trace file the run wrote; the schedule
(wait=1, warmup=1, active=3) fixes which ProfilerStep numbers the trace holds.
"""

from __future__ import annotations

import gzip
import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from torch_table import parse_time  # noqa: E402

from pista.cli import main  # noqa: E402
from pista.trace.load import load_trace  # noqa: E402

pytestmark = pytest.mark.capture

# tiny shapes: each run is a second or two on a CPU
TINY = {"matmul_add": ["--size", "32"], "linear": ["--size", "32", "--batch", "16"],
        "mlp": ["--size", "32", "--batch", "8"], "transformer": ["--size", "64", "--batch", "1"]}
# schedule(wait=1, warmup=1, active=3): steps 0 and 1 are not kept, 2, 3 and 4 are
DEFAULT_ACTIVE_STEPS = [2, 3, 4]
SELF_CPU = re.compile(r"^Self CPU time total: (\S+)$", re.M)


def self_cpu_totals(text: str) -> list[float]:
    return [parse_time(m) for m in SELF_CPU.findall(text)]


def pista_table_total(trace: Path, capsys) -> float:
    assert main(["table", str(trace)]) == 0
    (total,) = self_cpu_totals(capsys.readouterr().out)
    return total


def assert_close(a: float, b: float, rel: float = 0.01) -> None:
    assert a == pytest.approx(b, rel=rel), (a, b)


@pytest.mark.parametrize("workload", list(TINY))
def test_run_workload_trace_reads_back_with_the_printed_self_cpu_total(workload, tmp_path, capsys):
    out = tmp_path / workload
    assert main(["run", workload, *TINY[workload], "--device", "cpu", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    torch_totals = self_cpu_totals(printed)
    assert len(torch_totals) == 1  # torch's table; the diagnosis shows no second table

    for name in ("trace.json.gz", "table.txt", "analysis.json", "run.json"):
        assert (out / name).is_file(), name
    assert (out / "table.txt").read_text() in printed
    assert_close(pista_table_total(out / "trace.json.gz", capsys), torch_totals[0])

    analysis = json.loads((out / "analysis.json").read_text())
    assert analysis["summary"]["verdict"] == "cpu-only"
    assert analysis["summary"]["step_numbers"] == DEFAULT_ACTIVE_STEPS
    assert_close(analysis["summary"]["self_cpu_total_us"], torch_totals[0])
    record = json.loads((out / "run.json").read_text())
    assert record["config"]["workload"] == workload and record["device"] == "cpu"
    assert record["versions"]["torch"] == torch.__version__
    assert record["steps_done"] == 5 and record["active_steps_done"] == 3 and not record["interrupted"]
    if workload != "matmul_add":
        assert "train_step" in (out / "table.txt").read_text()


def test_run_matmul_add_records_the_seed_ops(tmp_path, capsys):
    out = tmp_path / "mm"
    assert main(["run", "matmul_add", "--size", "16", "--device", "cpu", "--out", str(out), "--warmup"]) == 0
    capsys.readouterr()
    trace = load_trace(out / "trace.json.gz")
    names = {trace.event_name(i) for i in range(len(trace))}
    assert {"matmul_add", "aten::matmul", "aten::add"} <= names
    # record_shapes=True: the matmul's input shapes are in the trace
    shapes = [trace.args(i).get("Input Dims") for i in range(len(trace)) if trace.event_name(i) == "aten::matmul"]
    assert shapes and all(s[:2] == [[16, 16], [16, 16]] for s in shapes)
    assert json.loads((out / "run.json").read_text())["config"]["warmup"] == 10  # bare --warmup


def test_schedule_options_and_steps(tmp_path, capsys, monkeypatch):
    import warnings

    import torch.profiler.profiler as torch_profiler

    # torch warns once per process that a new cycle clears the last one's events (--repeat): pista saved
    # that cycle already, and the UserWarning leaked to the user; a fresh process's state for the test
    monkeypatch.setattr(torch_profiler, "_WARNINGS_SHOWN", set())
    out = tmp_path / "sched"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert main(["run", "matmul_add", "--size", "16", "--device", "cpu", "--out", str(out),
                     "--wait", "0", "--warmup-steps", "2", "--active", "2", "--repeat", "2"]) == 0
    assert not [w for w in caught if "clears events" in str(w.message)]
    capsys.readouterr()
    first = load_trace(out / "trace.json.gz")
    second = load_trace(out / "trace.cycle2.json.gz")

    def steps(trace):
        return sorted(int(n.split("#")[1]) for n in trace.names if n.startswith("ProfilerStep#"))

    # cycle = warmup 2 + active 2: steps 2, 3 then 6, 7
    assert steps(first) == [2, 3] and steps(second) == [6, 7]
    assert (out / "table.cycle2.txt").is_file()


def test_session_api(tmp_path):
    import pista

    a = torch.randn(32, 32)
    pista.step()  # outside any session: nothing happens
    with pista.profile(tmp_path / "api", device="cpu") as p:
        assert p.total_steps == 5
        for _ in range(p.total_steps):
            with torch.profiler.record_function("work"):
                a @ a
            pista.step()
    assert p.trace_path == tmp_path / "api" / "trace.json.gz"
    analysis = pista.analyze(p)
    assert analysis.summary.step_numbers == DEFAULT_ACTIVE_STEPS
    assert analysis.table.row("work").calls == 3
    assert_close(analysis.summary.self_cpu_total_us, self_cpu_totals(p.table())[0])
    assert pista.analyze(str(p.trace_path)).summary.self_cpu_total_us == analysis.summary.self_cpu_total_us
    # the CPU facts the CPU rules need, written into the trace itself
    with gzip.open(p.trace_path) as fh:
        host = json.load(fh)["pista_host"]
    assert host["intra_op_threads"] == torch.get_num_threads()
    assert host["cores"] == len(os.sched_getaffinity(0))
    assert host["bf16_gemm"] == (torch.cpu._is_avx512_bf16_supported() or torch.cpu._is_amx_tile_supported())


def test_session_too_few_steps_saves_nothing(tmp_path):
    import pista

    with pista.profile(tmp_path / "short", device="cpu") as p:
        p.step()
        p.step()  # wait and warm-up only: no active step completed
    assert p.trace_path is None
    assert not any((tmp_path / "short").iterdir())


USER_SCRIPT = """
    import sys
    import torch
    import pista

    def train_step(x):
        with torch.profiler.record_function("user_step"):
            return (x @ x).relu().sum()

    x = torch.randn(32, 32)
    for _ in range(int(sys.argv[1])):
        train_step(x)
        if "--mark" in sys.argv:
            pista.step()
    import pickle
    pickle.dumps(train_step)  # the script is sys.modules["__main__"] while it runs, as with python script.py
    if "--fail" in sys.argv:
        raise RuntimeError("boom")
    print("script args", sys.argv[1:])
"""


@pytest.fixture
def user_script(tmp_path) -> Path:
    path = tmp_path / "user_script.py"
    path.write_text(textwrap.dedent(USER_SCRIPT))
    return path


@pytest.mark.parametrize("how", ["pista.step", "--function"])
def test_profile_script(how, user_script, tmp_path, capsys):
    out = tmp_path / "prof"
    opts = ["--function", "train_step"] if how == "--function" else []
    args = ["6", "--mark"] if how == "pista.step" else ["6"]
    assert main(["profile", *opts, "--device", "cpu", "--out", str(out), str(user_script), *args]) == 0
    printed = capsys.readouterr().out
    assert f"script args {args!r}" in printed  # the script saw its own arguments
    analysis = json.loads((out / "analysis.json").read_text())
    assert analysis["summary"]["step_numbers"] == DEFAULT_ACTIVE_STEPS
    user_rows = [r for r in analysis["table"]["rows"] if r["name"] == "user_step"]
    assert user_rows[0]["calls"] == 3
    assert_close(pista_table_total(out / "trace.json.gz", capsys), self_cpu_totals(printed)[0])


def test_profile_with_stack_prints_the_ops_table_without_frames(user_script, tmp_path, capsys):
    # with_stack=True: torch's own table listed every Python frame as a row, pista's own
    # (pista/cli/__init__.py(109): main ...) among them, and the script's <module> with a negative Self CPU
    out = tmp_path / "stack"
    assert main(["profile", "--with-stack", "--device", "cpu", "--out", str(out), str(user_script), "6",
                 "--mark"]) == 0
    printed = capsys.readouterr().out
    table = printed[: printed.index("Self CPU time total")].splitlines()
    rows = [line for line in table[3:] if line.strip() and not line.startswith("---")]
    assert rows and not [r for r in rows if ".py(" in r or "pista/" in r]
    assert not [r for r in rows if re.search(r"\s-\d", r)]  # no negative time
    names = [r.split()[0] for r in rows]
    assert "aten::matmul" in names and "user_step" in names  # the ops and the user's regions stay
    assert ".py(" in (out / "table.txt").read_text()  # torch's own table, frames and all, is kept there


def test_a_script_with_fewer_steps_than_the_schedule_is_warned(user_script, tmp_path, capsys):
    # 3 steps for a schedule of 1 + 1 + 3: one active step completes, the rest is the script's tail
    out = tmp_path / "few"
    assert main(["profile", "--device", "cpu", "--out", str(out), str(user_script), "3", "--mark"]) == 0
    err = capsys.readouterr().err
    run = json.loads((out / "run.json").read_text())
    assert run["steps_done"] == 3 and run["active_steps_done"] == 1
    assert "ended after 3 step(s), fewer than the 5" in err and "1 complete active step(s)" in err
    assert main(["profile", "--device", "cpu", "--out", str(tmp_path / "enough"), str(user_script), "6", "--mark"]) == 0
    assert "fewer than" not in capsys.readouterr().err


def test_profile_script_without_steps_says_how(user_script, tmp_path, capsys):
    assert main(["profile", "--device", "cpu", "--out", str(tmp_path / "p"), str(user_script), "6"]) == 2
    err = capsys.readouterr().err
    assert "pista.step()" in err and "--function" in err and "Traceback" not in err
    assert main(["profile", "--function", "nope", str(user_script), "6"]) == 2
    assert "nope" in capsys.readouterr().err


def test_profile_script_that_fails_keeps_its_steps(user_script, tmp_path, capsys):
    out = tmp_path / "fail"
    assert main(["profile", "--device", "cpu", "--out", str(out), str(user_script), "6", "--mark", "--fail"]) == 1
    err = capsys.readouterr().err
    assert "RuntimeError: boom" in err  # the script's own traceback is the user's to see
    assert json.loads((out / "run.json").read_text())["script_exit_code"] == 1
    assert load_trace(out / "trace.json.gz").notices == []


def test_sweep_points_and_html_guard(tmp_path, capsys):
    import importlib.util

    out, html = tmp_path / "sweep", tmp_path / "sweep.html"
    assert main(["sweep", "matmul_add", "--sizes", "16,48", "--warmup", "1", "--device", "cpu",
                 "--out", str(out), "--html", str(html)]) == 0
    captured = capsys.readouterr()
    points = json.loads((out / "sweep.json").read_text())["points"]
    assert [p["size"] for p in points] == [16, 48]
    for p in points:
        assert {"size", "self_cpu_total_us", "self_device_total_us", "verdict"} <= set(p)
        torch_total = self_cpu_totals((out / f"size_{p['size']}" / "table.txt").read_text())[0]
        assert_close(p["self_cpu_total_us"], torch_total)
        assert p["verdict"] == "cpu-only"
    assert "CPU only" in captured.out
    if importlib.util.find_spec("pista.render.sweep") is None:
        assert "pista.render.sweep" in captured.err and not html.exists()
    else:
        assert html.is_file()


def test_turning_point():
    from pista.cli.sweep import turning_point

    def pts(*verdicts):
        return [{"size": 64 << (2 * i), "verdict": v} for i, v in enumerate(verdicts)]

    assert "between size 256 (balanced) and size 1024" in turning_point("mm", pts("overhead-bound", "balanced",
                                                                                  "compute-bound"))
    assert "does not turn" in turning_point("mm", pts("overhead-bound", "overhead-bound"))
    assert "already at size 64" in turning_point("mm", pts("compute-bound"))


def test_bad_arguments_are_one_line_errors(tmp_path, capsys):
    for argv in (["sweep", "matmul_add", "--sizes", "a,b"], ["run", "linear", "--active", "0", "--device", "cpu"],
                 ["run", "matmul_add", "--dtype", "int3", "--device", "cpu"],
                 ["run", "matmul_add", "--size", "0", "--device", "cpu"],
                 ["run", "mlp", "--batch", "0", "--device", "cpu"],
                 ["run", "matmul_add", "--steps", "2", "--device", "cpu"]):
        assert main([*argv, "--out", str(tmp_path / "x")]) == 2
        err = capsys.readouterr().err
        assert err.startswith("pista: error:") and err.count("\n") == 1, err
        assert not (tmp_path / "x").exists(), argv  # refused before anything ran


def test_zero_is_not_the_default_size_and_too_few_steps_say_why(tmp_path, capsys):
    assert main(["run", "matmul_add", "--size", "0", "--device", "cpu", "--out", str(tmp_path / "a")]) == 2
    assert "--size 0: must be positive" in capsys.readouterr().err
    assert main(["run", "matmul_add", "--steps", "2", "--device", "cpu", "--out", str(tmp_path / "b")]) == 2
    err = capsys.readouterr().err
    assert "records from step 3" in err and "--steps 2" in err


# -- subprocesses: what a user at a shell sees --------------------------------------------------

PISTA = [sys.executable, "-m", "pista"]


def test_pista_analyze_does_not_import_torch():
    fixture = Path(__file__).parent / "fixtures" / "seed_mm64_warm.json.gz"
    code = textwrap.dedent(f"""
        import contextlib, io, sys
        import pista
        from pista.cli import main
        with contextlib.redirect_stdout(io.StringIO()):
            assert main(["analyze", {str(fixture)!r}]) == 0
            assert main(["table", {str(fixture)!r}]) == 0
        print(sorted(m for m in sys.modules if m.split(".")[0] in ("torch", "pandas")))
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the CPU fallback")
def test_cpu_fallback_is_said_once(tmp_path):
    done = subprocess.run([*PISTA, "sweep", "matmul_add", "--sizes", "8,16", "--warmup", "0",
                           "--out", str(tmp_path / "s")], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    notices = [line for line in done.stderr.splitlines() if "CPU" in line]
    assert len(notices) == 1 and "no CUDA" in notices[0]
    assert "Traceback" not in done.stderr and "USDT" not in done.stderr


def _interrupt(argv: list[str], wait_for: str, cwd: Path, after_s: float = 1.0) -> subprocess.CompletedProcess:
    """Start pista, wait until stderr shows `wait_for`, let it run `after_s`, then send SIGINT."""
    import signal
    import time

    proc = subprocess.Popen([*PISTA, *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=cwd)
    seen = []
    while True:
        line = proc.stderr.readline()
        if not line:
            break
        seen.append(line)
        if wait_for in line:
            break
    time.sleep(after_s)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, "".join(seen) + err)


def test_ctrl_c_during_steps_saves_the_recorded_steps(tmp_path):
    out = tmp_path / "int"
    done = _interrupt(["run", "linear", "--size", "256", "--batch", "256", "--device", "cpu", "--steps", "1000000",
                       "--wait", "0", "--warmup-steps", "1", "--active", "1000000", "--out", str(out)],
                      "profiling", tmp_path, after_s=0.3)
    assert done.returncode == 130, done.stderr
    last = done.stderr.strip().splitlines()[-1]
    m = re.match(r"pista: interrupted after (\d+) step\(s\); saved the partial trace of (\d+) active step\(s\) "
                 r"to (\S+)$", last)
    assert m, done.stderr
    assert "Traceback" not in done.stderr
    active = int(m.group(2))
    assert active >= 1 and int(m.group(1)) == active + 1  # + the profiler's warm-up step
    trace = load_trace(m.group(3))
    assert trace.notices == []  # a whole file, not a salvaged one
    with gzip.open(m.group(3)) as fh:
        json.load(fh)
    steps = [n for n in trace.names if n.startswith("ProfilerStep#")]
    assert active <= len(steps) <= active + 1  # the step cut short is kept too
    assert sorted(p.name for p in out.iterdir()) == ["run.json", "table.txt", "trace.json.gz"]
    assert json.loads((out / "run.json").read_text())["interrupted"] is True


def test_ctrl_c_during_warmup_saves_nothing(tmp_path):
    out = tmp_path / "warm"
    done = _interrupt(["run", "matmul_add", "--size", "64", "--device", "cpu", "--warmup", "100000000",
                       "--out", str(out)], "warm-up", tmp_path, after_s=0.5)
    assert done.returncode == 130, done.stderr
    assert done.stderr.strip().splitlines()[-1] == (
        "pista: interrupted during warm-up; no active step had completed, nothing saved")
    assert not (out / "trace.json.gz").exists()


def test_ctrl_c_in_a_profiled_script(tmp_path):
    script = tmp_path / "forever.py"
    script.write_text(textwrap.dedent("""
        import sys
        import time
        import torch
        import pista
        x = torch.randn(64, 64)
        i = 0
        while True:
            x @ x
            time.sleep(0.01)
            pista.step()
            i += 1
            if i == 4:
                print("four steps", file=sys.stderr, flush=True)
    """))
    out = tmp_path / "prof"
    done = _interrupt(["profile", "--device", "cpu", "--out", str(out), str(script)], "four steps", tmp_path,
                      after_s=0.3)
    assert done.returncode == 130, done.stderr
    assert "saved the partial trace" in done.stderr.strip().splitlines()[-1]
    assert load_trace(out / "trace.json.gz").notices == []


def test_run_analyzes_every_cycle_it_records(tmp_path, capsys):
    out = tmp_path / "cycles"
    assert main(["run", "matmul_add", "--size", "16", "--device", "cpu", "-o", str(out), "--warmup",
                 "--repeat", "2", "--with-stack"]) == 0
    text = capsys.readouterr().out
    second = json.loads((out / "analysis.cycle2.json").read_text())
    assert second["summary"]["steps"] == 3 and "cycle 2: cpu-only" in text
    # with_stack=True reached the profiler: the trace carries python_function frames
    trace = load_trace(out / "trace.json.gz")
    assert trace.category_id("python_function") >= 0


def test_the_thread_count_is_the_steps_own(tmp_path):
    # a script that sets its thread count after the session started: the trace records the count its
    # steps ran with, which cpu-threads reads
    import pista

    before = torch.get_num_threads()
    wanted = 1 if before != 1 else 2  # a count other than the one the session started with
    a = torch.randn(32, 32)
    try:
        with pista.profile(tmp_path / "threads", device="cpu") as p:
            torch.set_num_threads(wanted)
            for _ in range(p.total_steps):
                a @ a
                pista.step()
    finally:
        torch.set_num_threads(before)
    with gzip.open(p.trace_path) as fh:
        assert json.load(fh)["pista_host"]["intra_op_threads"] == wanted
