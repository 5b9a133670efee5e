"""The reader against inputs made to break it (issue 18): sums that would overflow int64, JSON that is
no trace, gzip bombs, files shaped to make the streamed reader slow or crash, a foreign accelerator's
trace and a file name that is not UTF-8. Each test writes the input and runs the real reader or CLI.

The slow-input tests run pista in a subprocess with a generous timeout, not a timing assertion: each
finishes in seconds now and took minutes before (numbers in the tests' comments).
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
import sys
import zlib
from pathlib import Path

import numpy as np
import pytest
from conftest import FIXTURES, fixture

from pista.cli import main
from pista.trace import load, stream
from pista.trace.load import decode_trace, load_trace, read_bytes

PISTA = [sys.executable, "-m", "pista"]
REAL = "seed_mm64_cold"  # a small real H200 trace
SLOW_TIMEOUT_S = 60  # each slow-input run below takes a few seconds now, minutes before


def real_doc() -> dict:
    return json.loads(gzip.decompress(fixture(REAL).read_bytes()))


def op(name: str = "aten::mm", ts: float = 10.0, dur: float = 5.0, **extra: object) -> dict:
    return {"ph": "X", "cat": "cpu_op", "name": name, "pid": 1, "tid": 1, "ts": ts, "dur": dur, **extra}


def write(path: Path, events: list[dict], **keys: object) -> Path:
    path.write_text(json.dumps({"traceEvents": events, **keys}))
    return path


def run_cli(*argv: object, env: dict[str, str] | None = None, cwd: Path | None = None,
            timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*PISTA, *argv], capture_output=True, text=True, timeout=timeout, cwd=cwd,
                          env={**os.environ, "PISTA_DEBUG": "", **(env or {})}, errors="replace")


def one_error_line(proc: subprocess.CompletedProcess[str], says: str) -> None:
    lines = proc.stderr.splitlines()
    assert proc.returncode == 2 and len(lines) == 1, proc.stderr
    assert lines[0].startswith("pista: error: ") and says in lines[0], proc.stderr


def in_memory(path: Path):
    data, notices = read_bytes(path)
    return decode_trace(data, str(path), notices)


@pytest.fixture
def always_stream(monkeypatch):
    """The streamed reader for every file, in small blocks, two processes where it can."""
    monkeypatch.setattr(load, "STREAM_MIN_BYTES", 0)
    monkeypatch.setattr(stream, "BLOCK_BYTES", 4096)
    monkeypatch.setattr(stream, "PARALLEL_MIN_BYTES", 0)


# -- 2: sums that overflow int64 -------------------------------------------------------------


def test_durations_summing_past_int64_are_skipped_not_wrapped(tmp_path, capsys):
    # 8 ops of 1.5e15 µs (17 days... times 10^6): 1.2e19 ns in all, past int64; the table said
    # "Self CPU time total: -6.2e12 s" before
    doc = real_doc()
    doc["traceEvents"] += [op("aten::huge", ts=1.0 + k, dur=1.5e15) for k in range(8)]
    path = tmp_path / "huge_dur.json"
    path.write_text(json.dumps(doc))
    assert main(["table", str(path)]) == 0
    out, err = capsys.readouterr()
    assert "skipped 8 event(s) lasting" in err and "2^60 ns" in err
    total = next(line for line in out.splitlines() if line.startswith("Self CPU time total"))
    assert "-" not in total and "aten::huge" not in out


def test_many_long_steps_keep_their_totals_positive(tmp_path, capsys):
    # 100 steps of 1e14 µs: each fits, their sum (1e19 ns) does not; analyze's JSON had negative totals
    events = []
    for k in range(100):
        events.append(op(f"ProfilerStep#{k}", ts=1e14 * k, dur=1e14, cat="user_annotation"))
        events.append(op("aten::mm", ts=1e14 * k + 1, dur=1e14 - 2))
    path = write(tmp_path / "steps.json", events)
    assert main(["analyze", str(path), "--format", "json"]) == 0
    out, err = capsys.readouterr()
    summary = json.loads(out)["summary"]
    assert "2^60 ns" in err
    assert all(v >= 0 for v in summary.values() if isinstance(v, int | float) and not isinstance(v, bool))


def test_a_step_number_of_5000_digits_is_skipped_with_a_notice(tmp_path, capsys):
    # int() of 4300+ digits raises: exit 3 (internal error) before
    events = [op("ProfilerStep#" + "9" * 5000, ts=0.0, dur=100.0, cat="user_annotation"), op(ts=1.0, dur=50.0)]
    path = write(tmp_path / "digits.json", events)
    for verb in ("analyze", "table"):
        assert main([verb, str(path)]) == 0
        assert "numbered past int64" in capsys.readouterr().err


def test_a_time_far_before_zero_is_skipped(tmp_path):
    # ts -2e15 µs with one at +4e15 µs: a span of 6e18 ns plus the durations, near int64's end
    events = [op(ts=-2e15), op(ts=4e15), op(ts=4e15 + 10)]
    trace = load_trace(write(tmp_path / "far.json", events))
    assert len(trace) == 2 and (trace.ts > 0).all()
    assert any("skipped 1 malformed event(s) of 3" in n for n in trace.notices)


# -- 4: JSON that is no trace -----------------------------------------------------------------

NOT_TRACES = {
    "run_details.json": [{"run": 1, "gpu": "H200", "steps": 20}, {"run": 2}],
    "no_times.json": [{"ph": "X"}, {"ph": "X", "name": "aten::mm"}],
    "memory_timeline.json": {"traceEvents": [{"name": "allocated", "value": [[1, 2], [3, 4]]}]},
}


@pytest.mark.parametrize("name", sorted(NOT_TRACES))
def test_json_that_is_no_trace_is_refused(tmp_path, name):
    (tmp_path / name).write_text(json.dumps(NOT_TRACES[name]))
    one_error_line(run_cli("analyze", name, cwd=tmp_path), "not a chrome trace")


def _rank_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "job"
    folder.mkdir()
    for rank in (0, 1):
        shutil.copy(FIXTURES / "gloo" / "balanced_2" / f"rank-{rank}.json.gz", folder / f"rank-{rank}.json.gz")
    return folder


def test_a_folder_skips_non_trace_companions(tmp_path, capsys):
    # before: the list of objects became a phantom third rank, the run-details object failed the folder
    folder = _rank_folder(tmp_path)
    (folder / "memory.json").write_text(json.dumps(NOT_TRACES["no_times.json"]))
    (folder / "run_details.json").write_text(json.dumps({"model": "gpt", "steps": 20}))
    assert main(["analyze", str(folder), "--format", "json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert [r["rank"] for r in result["ranks"]] == [0, 1]
    skipped = [n for n in result["notices"] if n.startswith("skipped")]
    assert len(skipped) == 2 and "memory.json" in skipped[0] and "run_details.json" in skipped[1]
    assert all("not a chrome trace" in n for n in skipped)


def test_a_folder_of_only_non_traces_still_fails(tmp_path):
    (tmp_path / "run_details.json").write_text(json.dumps({"model": "gpt"}))
    one_error_line(run_cli("analyze", str(tmp_path)), "not a chrome trace")


# -- 6: a foreign accelerator's trace ---------------------------------------------------------


def mtia_events() -> list[dict]:
    """An MTIA-like trace: host ops, the MTIA runtime's launches, the device's CCP events."""
    events = [{"ph": "M", "name": "process_name", "pid": 0, "tid": 0, "args": {"name": "MTIA 0"}}]
    for k in range(5):
        t = 100.0 * k
        events += [op(ts=t, dur=40.0, args={"External id": k}),
                   op("mtiaLaunchKernel", ts=t + 5, dur=10.0, cat="mtia_runtime",
                      args={"External id": k, "correlation": 100 + k}),
                   op("mm_kernel", ts=t + 20, dur=60.0, cat="mtia_ccp_events", pid=0, tid=3,
                      args={"External id": k, "correlation": 100 + k, "device": 0})]
    return events


def test_mtia_device_activity_is_said_not_silently_cpu_only(tmp_path, capsys):
    path = write(tmp_path / "mtia.json", mtia_events(), deviceProperties=[{"id": 0, "name": "MTIA"}])
    assert main(["analyze", str(path)]) == 0
    err = capsys.readouterr().err
    assert "10 event(s) of MTIA device activity" in err and "not read" in err


# -- 7: crashes on the streamed path, and a file name that is not UTF-8 -----------------------


def test_events_separated_by_both_comma_space_and_comma(tmp_path, always_stream, monkeypatch):
    # the streamed reader's fast path assumed one separator and indexed past its block: IndexError
    # (exit 3) in every verb for such a trace over 16 MB (here in 64 KB blocks, ~600 events each)
    monkeypatch.setattr(stream, "BLOCK_BYTES", 1 << 16)
    monkeypatch.setattr(stream, "PARALLEL_MIN_BYTES", 1 << 60)  # one process: blocks start where it did
    body = "".join(json.dumps(op(f"aten::op{k % 5}", ts=10.0 * k)) + (", " if k % 2 else ",") for k in range(2000))
    path = tmp_path / "mixed.json"
    path.write_text('{"traceEvents": [' + body.rstrip(", ") + "]}")
    trace = load_trace(path)
    assert isinstance(trace.raw_args, stream.OffsetArgs) and len(trace) == 2000


def test_deeply_nested_metadata_after_the_events(tmp_path, always_stream):
    # the streamed reader decoded the keys after the list whole: RecursionError (exit 3)
    tail = "[" * 200_000 + "]" * 200_000
    path = tmp_path / "deep.json"
    path.write_text('{"traceEvents": [' + ",".join(json.dumps(op(ts=k)) for k in range(50)) + '], "x": ' + tail + "}")
    assert len(load_trace(path)) == 50


def test_more_categories_than_int16_holds_on_the_streamed_path(tmp_path, always_stream):
    # OverflowError (exit 3) before; now the in-memory reader's one line
    path = write(tmp_path / "cats.json", [op(ts=k, cat=f"c{k}") for k in range(33_000)])
    with pytest.raises(load.BadTrace, match="distinct event categories"):
        load_trace(path)


@pytest.mark.parametrize("argv", [["report", "{t}", "-o", "out.html"],
                                  ["diff", "{t}", "{t}", "--format", "json", "-o", "out.json"],
                                  ["diff", "{t}", "{t}", "--format", "html", "-o", "diff.html"]])
def test_a_file_name_that_is_not_utf8(tmp_path, argv):
    # UnicodeEncodeError (exit 3) before: the page holds the name, its bytes are not UTF-8
    name = b"tr\xffce.json"
    with open(os.path.join(os.fsencode(tmp_path), name), "wb") as handle:
        handle.write(gzip.decompress(fixture(REAL).read_bytes()))
    args = [name if a == "{t}" else a for a in argv]
    proc = subprocess.run([*PISTA, *args], cwd=tmp_path, capture_output=True, timeout=120,
                          env={**os.environ, "PISTA_DEBUG": ""})
    assert proc.returncode == 0, proc.stderr
    written = (tmp_path / argv[-1]).read_bytes().decode()  # valid UTF-8
    assert "tr\ufffdce.json" in written


@pytest.mark.parametrize("argv", [["analyze", "{t}"], ["analyze", "{t}", "--format", "json"], ["diff", "{t}", "{t}"]])
def test_a_file_name_that_is_not_utf8_on_a_strict_utf8_stdout(tmp_path, argv):
    # a UTF-8 locale (not C.UTF-8) makes Python's stdout strict: UnicodeEncodeError (exit 3) before
    name = b"tr\xffce.json"
    with open(os.path.join(os.fsencode(tmp_path), name), "wb") as handle:
        handle.write(gzip.decompress(fixture(REAL).read_bytes()))
    proc = subprocess.run([*PISTA, *[name if a == "{t}" else a for a in argv]], cwd=tmp_path, capture_output=True,
                          timeout=120, env={**os.environ, "PISTA_DEBUG": "", "PYTHONIOENCODING": "utf-8:strict"})
    assert proc.returncode == 0 and b"tr\xffce.json" in proc.stdout, proc.stderr


# -- 8: gzip bombs --------------------------------------------------------------------------


def gzip_bomb(path: Path, megabytes: int, filler: bytes = b" ") -> Path:
    """A valid trace whose middle unpacks to `megabytes` of filler, in one member, and whose last
    member is tiny: the gzip trailer (the last member's size) says ~100 bytes."""
    packer = zlib.compressobj(9, zlib.DEFLATED, 31)
    parts = [packer.compress(('{"traceEvents": [' + json.dumps(op(ts=0.0)) + ",").encode())]
    block = filler * (1 << 20)
    parts += [packer.compress(block) for _ in range(megabytes)]
    parts.append(packer.flush())
    parts.append(gzip.compress((json.dumps(op(ts=20.0)) + "]}").encode()))
    path.write_bytes(b"".join(parts))
    return path


def test_a_gzip_bomb_is_refused_past_the_limit(tmp_path):
    # 64 MB unpacked from 64 KB: read whole into memory before (1 MB of it reached 2 GiB RSS)
    bomb = gzip_bomb(tmp_path / "bomb.json.gz", 64)
    assert bomb.stat().st_size < 200_000
    for verb in ("table", "analyze"):
        proc = run_cli(verb, "bomb.json.gz", cwd=tmp_path, env={"PISTA_MAX_UNPACKED": str(8 << 20)})
        one_error_line(proc, "unpacks to more than 8,388,608 bytes")


def test_a_gzip_stream_that_understates_its_size_is_streamed(tmp_path):
    # the trailer says ~100 bytes; the real 40 MB go to the streamed reader (which holds a
    # whitespace gap as its comma), not into memory whole
    trace = load_trace(gzip_bomb(tmp_path / "multi.json.gz", 40))
    assert isinstance(trace.raw_args, stream.OffsetArgs)
    assert len(trace) == 2 and trace.notices == []


def test_an_unpacked_limit_that_is_no_number(tmp_path):
    proc = run_cli("table", str(fixture(REAL)), env={"PISTA_MAX_UNPACKED": "lots"})
    one_error_line(proc, "PISTA_MAX_UNPACKED")


# -- 9: inputs that made the reader quadratic ---------------------------------------------------


def test_a_wide_whitespace_gap_between_events(tmp_path):
    # 64 MB of spaces between two events: 335 s before (a per-byte check of the "separator"), <1 s now
    path = tmp_path / "gap.json"
    with open(path, "w") as handle:
        handle.write('{"traceEvents": [' + json.dumps(op(ts=0.0)) + "," + " " * (64 << 20))
        handle.write(json.dumps(op(ts=20.0)) + "," + json.dumps(op(ts=40.0)) + "]}")
    proc = run_cli("table", "gap.json", cwd=tmp_path, timeout=SLOW_TIMEOUT_S)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr


def test_padded_events(tmp_path):
    # every event padded with a different run of whitespace, 40 MB in all
    rng = np.random.default_rng(7)
    path = tmp_path / "padded.json"
    with open(path, "w") as handle:
        handle.write('{"traceEvents": [')
        for k in range(10_000):
            pad = " " * int(rng.integers(0, 8000))
            handle.write(("," if k else "") + pad + json.dumps(op(ts=10.0 * k)) + pad)
        handle.write("]}")
    proc = run_cli("table", "padded.json", cwd=tmp_path, timeout=SLOW_TIMEOUT_S)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr


def test_one_huge_event_name(tmp_path):
    # a 64 MB name of "},{": every new block rescanned the whole event (and each "},{" looked like
    # the end of one): quadratic, 30 s to read before (1.7 s now), the table past the timeout
    write(tmp_path / "name.json", [op(ts=0.0), op("},{" * (22 << 20), ts=1.0), op(ts=2.0)])
    proc = run_cli("table", "name.json", cwd=tmp_path, timeout=SLOW_TIMEOUT_S)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr


def test_a_name_full_of_compile_markers(tmp_path):
    # the compile-event regex `_data: .*compile_id=` backtracked: a 725 KB trace took minutes
    events = [op("aten::mm", ts=0.0, dur=100.0), op("_data: " * 100_000, ts=1.0, dur=10.0),
              op("aten::mm", ts=20.0, dur=10.0, cat="kernel", pid=0, tid=7, args={"stream": 7, "device": 0})]
    path = write(tmp_path / "markers.json", events)
    assert path.stat().st_size > 700_000
    proc = run_cli("analyze", "markers.json", cwd=tmp_path, timeout=SLOW_TIMEOUT_S)
    assert proc.returncode == 0, proc.stderr


# -- a skipped time in a damaged file -----------------------------------------------------------


def test_a_skipped_1e300_time_keeps_the_notices_short(tmp_path):
    # a cut-off file (so the float64 reader) with one ts of 1e300: skipped, yet the "placed to
    # within N ns" notice measured it and printed a 286-digit N before
    far = 2.0 ** 44  # µs: a time that is kept and does need the notice
    events = [op(ts=far + k) for k in range(5)] + [op(ts=1e300), op(ts=far + 9)]
    text = json.dumps({"traceEvents": events})
    path = tmp_path / "cut.json"
    path.write_text(text[: text.rindex("{")] + '{"ph": "X", "na')  # cut off mid-event
    proc = run_cli("table", str(path))
    assert proc.returncode == 0, proc.stderr
    placed = [line for line in proc.stderr.splitlines() if "placed to within" in line]
    assert placed and f"within {1000 * np.spacing(far + 4):.0f} ns" in placed[0]  # the latest kept time's
    assert "skipped 1 malformed event(s)" in proc.stderr
    assert max(len(line) for line in proc.stderr.splitlines()) < 400
