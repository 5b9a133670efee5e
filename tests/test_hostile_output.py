"""Hostile text and hostile output paths: what a trace's names hold is shown, never acted on by the
terminal; `-o` writes through a symlink and refuses to put a file in place of a device or a pipe."""

from __future__ import annotations

import gzip
import json
import os
import re
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import fixture

from pista.cli import main

PISTA = [sys.executable, "-m", "pista"]
# What a hostile trace puts in its names: a window title (OSC 0), a link (OSC 8), clear screen (CSI),
# a C1 CSI, a right-to-left override and a NUL.
HOSTILE = "\x1b]0;pwned\x07\x1b]8;;http://evil/\x07link\x1b]8;;\x07\x1b[2J\x9b31m\u202eevil\x00"
IN_FILE_NAME = "\x1b]0;pwned\x07\x1b[2J\x9b31m\u202eevil"  # what a file name can hold (no / or NUL)
SHOWN = r"\x1b]0;pwned"  # how the name reads once its control characters are written out
STACK_TRACE = "gpu/host_sync_item_stack"  # has python_function frames: the evidence shows a stack
SGR = re.compile(rb"\x1b\[[0-9;]*m")  # pista's own colours


def hostile_trace(folder: Path, name: str, file_name: str = "hostile.json", extra: tuple[dict, ...] = ()) -> Path:
    """A real trace whose op, kernel, Python-frame and thread names all end in HOSTILE."""
    doc = json.loads(gzip.decompress(fixture(name).read_bytes()))
    for e in doc["traceEvents"]:
        if e.get("cat") in ("cpu_op", "kernel", "python_function"):
            e["name"] += HOSTILE
        elif e.get("ph") == "M" and e.get("name") == "thread_name":
            e["args"]["name"] += HOSTILE
    doc["traceEvents"] += extra
    path = folder / file_name
    path.write_text(json.dumps(doc))
    return path


def strings(value: object):
    """Every string in a decoded JSON document."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from strings(v)


def run(args: list[str], color: bool, cwd: Path | None = None) -> subprocess.CompletedProcess[bytes]:
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR")}
    env["COLUMNS"] = "1000"  # no wrapping: one finding's evidence stays on one line to look at
    if color:
        env["FORCE_COLOR"] = "1"
    return subprocess.run([*PISTA, *args], capture_output=True, env=env, cwd=cwd, timeout=300)


def assert_inert(data: bytes, color: bool) -> str:
    """No byte the terminal would act on but pista's own colours; the text, colours taken out."""
    plain = SGR.sub(b"", data) if color else data
    assert b"\x1b" not in plain and b"\x07" not in plain and b"\x00" not in plain
    text = plain.decode("utf-8")
    assert not re.search("[\x80-\x9f\u202a-\u202e\u2066-\u2069]", text)
    return text


@pytest.mark.parametrize("color", [False, True])
def test_analyze_shows_hostile_names_as_text(tmp_path, color):
    trace = hostile_trace(tmp_path, STACK_TRACE)
    proc = run(["analyze", str(trace), "--table"], color)
    assert proc.returncode == 0, proc.stderr
    assert bool(SGR.search(proc.stdout)) == color  # pista's colours still work
    text = assert_inert(proc.stdout, color)
    lines = text.splitlines()
    starts = [line for line in lines if line.startswith("Start here")]
    assert starts and SHOWN in starts[0]  # the top fix
    evidence = [line for line in lines if line.startswith("  - ") and SHOWN in line]
    assert evidence  # the evidence names
    assert any(f"read_loss{SHOWN}" in line for line in evidence)  # the stack frame after "in"
    assert any(line.startswith("aten::") and SHOWN in line for line in lines)  # the rebuilt table
    assert f"thread 490 (python3){SHOWN}" in text  # a lane named by the trace
    assert r"\u202eevil\x00" in text


@pytest.mark.parametrize("color", [False, True])
def test_table_and_diff_show_hostile_names_as_text(tmp_path, color):
    a = hostile_trace(tmp_path, STACK_TRACE, "a.json")
    b = hostile_trace(tmp_path, "seed_mm64_cold", "b.json")
    table = run(["table", str(a)], color)
    assert table.returncode == 0, table.stderr
    assert SHOWN in assert_inert(table.stdout, False)  # the table has no colours of its own
    diff = run(["diff", str(a), str(b)], color)
    assert diff.returncode == 0, diff.stderr
    assert SHOWN in assert_inert(diff.stdout, False)


@pytest.mark.parametrize("color", [False, True])
def test_folder_of_ranks_shows_hostile_names_as_text(tmp_path, color):
    # `pista analyze DIR` escaped rich markup only: ESC, BEL, C1 CSI and U+202E went to the terminal
    job = tmp_path / "job"
    job.mkdir()
    for rank in (0, 1):
        hostile_trace(job, f"gloo/straggler_2/rank-{rank}", f"rank-{rank}.json")
    proc = run(["analyze", str(job)], color)
    assert proc.returncode == 0, proc.stderr
    assert bool(SGR.search(proc.stdout)) == color
    lines = assert_inert(proc.stdout, color).splitlines()
    evidence = [line for line in lines if line.startswith("  - ")]
    assert any(line.startswith(f"  - c10d::allreduce_{SHOWN}") for line in evidence)  # an op's name
    assert any(f"(pt_gloo_runloop){SHOWN}" in line for line in evidence)  # a thread's name


def test_a_newline_in_a_name_forges_no_line(tmp_path):
    # a name's newline started a line of its own: a fake finding, a fake table row
    forged = "\nFORGED  fake-rule: forged\tline"
    a = tmp_path / "a.json"
    doc = json.loads(gzip.decompress(fixture(STACK_TRACE).read_bytes()))
    for e in doc["traceEvents"]:
        if e.get("cat") in ("cpu_op", "kernel", "python_function"):
            e["name"] += forged
    a.write_text(json.dumps(doc))
    b = hostile_trace(tmp_path, "seed_mm64_cold", "b.json")
    shown = forged.replace("\n", "\\n").replace("\t", "\\t")
    for args in (["analyze", str(a)], ["table", str(a)], ["diff", str(a), str(b)], ["diff", str(b), str(a)]):
        proc = run(args, False)
        assert proc.returncode == 0, proc.stderr
        text = assert_inert(proc.stdout, False)
        assert shown[:20] in text, args  # the table cuts names past 52 characters
        assert not any(line.lstrip().startswith("FORGED") for line in text.splitlines()), args


@pytest.mark.parametrize("folder", [False, True])
def test_analyze_json_escapes_and_keeps_the_name(tmp_path, folder):
    # ensure_ascii=False wrote C1 (the 8-bit CSI) and U+202E raw, in one trace's JSON and a folder's
    if folder:
        for rank in (0, 1):
            hostile_trace(tmp_path, f"gloo/straggler_2/rank-{rank}", f"rank-{rank}.json")
        target = tmp_path
    else:
        target = hostile_trace(tmp_path, STACK_TRACE)
    proc = run(["analyze", str(target), "--format", "json"], False)
    assert proc.returncode == 0, proc.stderr
    assert_inert(proc.stdout, False)
    assert "evil" in proc.stdout.decode()  # the rest of the text stays as it is, not escaped
    # read back, the escapes are the names themselves
    assert any(s.endswith(HOSTILE) for s in strings(json.loads(proc.stdout)))


def test_json_output_escapes_and_keeps_the_name(tmp_path):
    a = hostile_trace(tmp_path, STACK_TRACE, "a.json")
    b = hostile_trace(tmp_path, "seed_mm64_cold", "b.json")
    proc = run(["diff", str(a), str(b), "--format", "json"], False)
    assert proc.returncode == 0, proc.stderr
    assert_inert(proc.stdout, False)
    # read back, the escapes are the names themselves
    assert any(s.endswith(HOSTILE) for s in strings(json.loads(proc.stdout)))


def test_error_and_notice_lines_show_control_characters_as_text(tmp_path):
    # a file NAME with control characters, and one event the reader skips: a notice naming the file
    bad = {"ph": "X", "cat": "cpu_op", "name": HOSTILE, "pid": 1, "tid": 1, "ts": HOSTILE, "dur": 1}
    named = hostile_trace(tmp_path, "seed_mm64_cold", f"t{IN_FILE_NAME}.json", (bad,))
    notice = run(["table", str(named)], False)
    assert notice.returncode == 0
    lines = assert_inert(notice.stderr, False).splitlines()
    assert lines and all(line.startswith("pista: notice: ") for line in lines)
    assert f"t{SHOWN}" in lines[0]
    # an error about that name, and one that quotes the argument given (argparse's own line)
    named.write_text("")
    error = run(["analyze", str(named)], True)
    assert error.returncode == 2
    assert f"pista: error: {tmp_path}/t{SHOWN}" in assert_inert(error.stderr, False)
    choice = run(["table", str(named), "--sort-by", HOSTILE.replace("\x00", "")], True)
    assert choice.returncode == 2 and "pwned" in assert_inert(choice.stderr, False)
    # annotate's "wrote" line names the output
    out = tmp_path / f"o{IN_FILE_NAME}.json"
    wrote = run(["annotate", str(fixture("seed_mm64_cold")), "-o", str(out)], False)
    assert wrote.returncode == 0 and f"o{SHOWN}" in assert_inert(wrote.stderr, False)
    assert out.exists()


def test_file_and_folder_names_are_shown_as_text(tmp_path):
    # the "wrote" lines of report and diff printed the output's name raw, and so did a folder's title
    # and its notices (which name the files skipped)
    trace = fixture(TRACE)
    page = tmp_path / f"r{IN_FILE_NAME}.html"
    report = run(["report", str(trace), "-o", str(page)], False)
    assert report.returncode == 0 and page.exists()
    assert f"pista: wrote {tmp_path}/r{SHOWN}" in assert_inert(report.stderr, False)
    out = tmp_path / f"d{IN_FILE_NAME}\nline.json"  # a newline too: one line still
    diff = run(["diff", str(trace), str(trace), "--format", "json", "-o", str(out)], False)
    assert diff.returncode == 0 and out.exists()
    wrote = assert_inert(diff.stderr, False)
    assert wrote.startswith(f"pista: wrote {tmp_path}/d{SHOWN}") and wrote.endswith("\\nline.json\n")
    assert wrote.count("\n") == 1
    job = tmp_path / f"job{IN_FILE_NAME}"
    job.mkdir()
    for rank in (0, 1):
        (job / f"rank-{rank}.json.gz").write_bytes(fixture(f"gloo/balanced_2/rank-{rank}").read_bytes())
    (job / f"n{IN_FILE_NAME}.json").write_text(json.dumps({"model": "gpt"}))  # no trace: skipped
    for color in (False, True):
        folder = run(["analyze", str(job)], color)
        assert folder.returncode == 0, folder.stderr
        text = assert_inert(folder.stdout, color)
        assert f"pista: {tmp_path}/job{SHOWN}" in text  # the title
        notices = [line for line in text.splitlines() if f"skipped {tmp_path}/job{SHOWN}" in line]
        assert notices and f"/n{SHOWN}" in notices[0]  # a notice, naming the file skipped


def test_a_newline_in_a_file_name_forges_no_notice_line(tmp_path):
    # notices and annotate's "wrote" line kept a newline in the file's name: a line of its own
    bad = {"ph": "X", "cat": "cpu_op", "name": "x", "pid": 1, "tid": 1, "ts": "no time", "dur": 1}
    named = hostile_trace(tmp_path, "seed_mm64_cold", "t\nFORGED.json", (bad,))
    notice = run(["table", str(named)], False)
    assert notice.returncode == 0
    lines = assert_inert(notice.stderr, False).splitlines()
    assert lines and all(line.startswith("pista: notice: ") for line in lines)
    assert "t\\nFORGED.json" in lines[0]
    out = tmp_path / "o\nFORGED.json"
    wrote = run(["annotate", str(fixture("seed_mm64_cold")), "-o", str(out)], False)
    assert wrote.returncode == 0 and out.exists()
    assert assert_inert(wrote.stderr, False).startswith(f"pista: wrote {tmp_path}/o\\nFORGED.json: ")
    assert wrote.stderr.count(b"\n") == 1


# -- -o onto a symlink, a device, a pipe ---------------------------------------------------------

TRACE = "seed_mm64_cold"


def annotated_ok(path: Path) -> bool:
    events = json.loads(path.read_bytes())["traceEvents"]
    return any(e.get("cat") == "pista" for e in events)


def test_output_through_a_symlink_keeps_the_link(tmp_path):
    here, there = tmp_path / "here", tmp_path / "there"
    here.mkdir()
    there.mkdir()
    target = there / "report.json"
    target.write_text("old")
    link = here / "link.json"
    link.symlink_to(target)
    dangling = here / "dangling.json"
    dangling.symlink_to(there / "new.json")
    assert main(["annotate", str(fixture(TRACE)), "-o", str(link)]) == 0
    assert main(["annotate", str(fixture(TRACE)), "-o", str(dangling)]) == 0
    assert link.is_symlink() and dangling.is_symlink()  # the links stay links
    assert annotated_ok(target) and annotated_ok(there / "new.json")  # their targets got the bytes
    assert sorted(os.listdir(here)) == ["dangling.json", "link.json"]  # no temp file left anywhere
    assert sorted(os.listdir(there)) == ["new.json", "report.json"]


def test_output_through_a_symlink_onto_the_input_is_refused(tmp_path, capsys):
    src = tmp_path / "in.json.gz"
    src.write_bytes(fixture(TRACE).read_bytes())
    link = tmp_path / "elsewhere" / "link.json.gz"
    link.parent.mkdir()
    link.symlink_to(src)
    assert main(["annotate", str(src), "-o", str(link)]) == 2
    assert "refusing to overwrite the input" in capsys.readouterr().err
    assert src.read_bytes() == fixture(TRACE).read_bytes() and link.is_symlink()


def _char_device(path: Path) -> Path:
    if os.geteuid() != 0:
        pytest.skip("making a device node needs root")
    os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(1, 3))  # /dev/null's numbers, in tmp_path
    return path


@pytest.mark.parametrize("kind", ["fifo", "device", "link to a device"])
def test_output_onto_a_device_or_pipe_is_refused(tmp_path, capsys, kind):
    node = tmp_path / "node"
    if kind == "fifo":
        os.mkfifo(node)
    else:
        _char_device(node)
    given = node
    if kind == "link to a device":
        given = tmp_path / "out.json"
        given.symlink_to(node)
    before = node.lstat()
    assert main(["annotate", str(fixture(TRACE)), "-o", str(given)]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err[-1] == (f"pista: error: {given}: not a regular file (a device, pipe or socket); "
                       "give a file name, or -o - for standard output")
    after = node.lstat()
    assert (after.st_mode, after.st_ino) == (before.st_mode, before.st_ino)  # still the same node
    assert sorted(os.listdir(tmp_path)) == sorted({"node", given.name})


def test_output_onto_a_link_to_stdout_is_refused_and_dash_is_stdout(tmp_path):
    """`-o /dev/stdout` as a link in tmp_path: were it replaced, the damage stays in tmp_path."""
    link = tmp_path / "stdout.json"
    link.symlink_to("/proc/self/fd/1")
    refused = run(["annotate", str(fixture(TRACE)), "-o", str(link)], False, cwd=tmp_path)
    assert refused.returncode == 2 and refused.stdout == b""
    assert refused.stderr.decode().startswith(f"pista: error: {link}: not a regular file")
    assert link.is_symlink()
    dash = run(["annotate", str(fixture(TRACE)), "-o", "-"], False, cwd=tmp_path)
    assert dash.returncode == 0 and b"wrote standard output" in dash.stderr
    assert any(e.get("cat") == "pista" for e in json.loads(dash.stdout)["traceEvents"])
    assert sorted(os.listdir(tmp_path)) == ["stdout.json"]  # no file named '-'


# -- a very long name ------------------------------------------------------------------------------


def long_name_analysis(folder: Path, length: int):
    """The analysis of a real trace whose aten::item ops (named in the host-sync finding's title,
    message and evidence) carry a name of `length` characters."""
    from pista.analysis import analyze

    doc = json.loads(gzip.decompress(fixture(STACK_TRACE).read_bytes()))
    for e in doc["traceEvents"]:
        if e.get("name") == "aten::item":
            e["name"] += "x" * length
    path = folder / "long.json"  # one name for every length: the outputs differ by the op name only
    path.write_text(json.dumps(doc))
    return analyze(path)


def test_a_long_name_is_cut_and_renders_in_linear_time(tmp_path):
    # rich wrapped the whole name into thousands of lines in quadratic time: an 8 MB op name took
    # 225 s to print (the JSON 3.8 s); shown cut, both sizes render in about the same time now
    from pista.render import terminal

    small, large = 250_000, 1_000_000
    times, outputs = [], []
    for length in (small, large):
        analysis = long_name_analysis(tmp_path, length)
        best = float("inf")
        for _ in range(3):
            start = time.perf_counter()
            text = terminal.render(analysis, width=110, show_table=True)
            best = min(best, time.perf_counter() - start)
        times.append(best)
        outputs.append(text)
    # linear is at most 4x (the sizes' ratio), the quadratic wrap was 16x: the line between, 8x
    assert times[1] / times[0] < 2 * large / small, times
    assert "aten::itemxxx" in outputs[0] and "x" * 400 not in outputs[0]  # the name is there, cut
    assert outputs[1] == outputs[0]  # at the same place, whatever its length
    # the JSON keeps the name whole
    from pista.render import json as json_renderer

    doc = json.loads(json_renderer.render(long_name_analysis(tmp_path, small)))
    assert any(s == "aten::item" + "x" * small for s in strings(doc))
