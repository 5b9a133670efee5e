"""The terminal report in a real pseudo-terminal: its width, NO_COLOR, and clean pipes."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import struct
import subprocess
import sys
import termios

import pytest
from conftest import fixture

PISTA = [sys.executable, "-m", "pista"]


def _in_pty(args: list[str], columns: int, env: dict[str, str]) -> str:
    """Run in a pseudo-terminal of `columns` columns; what it printed, as text."""
    main, child = pty.openpty()
    fcntl.ioctl(child, termios.TIOCSWINSZ, struct.pack("HHHH", 50, columns, 0, 0))
    env = {k: v for k, v in {**os.environ, **env}.items() if k not in ("COLUMNS", "LINES") or k in env}
    proc = subprocess.Popen(args, stdin=child, stdout=child, stderr=child, env=env, close_fds=True)
    os.close(child)
    chunks = []
    while True:
        try:
            data = os.read(main, 65536)
        except OSError:  # EIO: the child closed its end
            break
        if not data:
            break
        chunks.append(data)
    proc.wait(timeout=120)
    os.close(main)
    return b"".join(chunks).decode("utf-8", "replace")


def test_eighty_columns_and_no_color():
    env = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR",)}
    # a trace under the reader's progress-bar size (stream.PROGRESS_MIN_BYTES): on a loaded machine the bar of
    # a slow read shared the pty with the text
    out = _in_pty([*PISTA, "analyze", str(fixture("gpu/bert_as_written")), "--no-table"], 80,
                  {**env, "NO_COLOR": "1"})
    lines = out.replace("\r\n", "\n").splitlines()
    assert len(lines) > 10
    assert max(len(line) for line in lines) <= 80
    assert "\x1b" not in out


def test_color_in_a_terminal_unless_no_color():
    args = [*PISTA, "analyze", str(fixture("gpu/host_sync_item")), "--no-table"]
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR")}
    assert "\x1b[" in _in_pty(args, 100, env)
    forced = subprocess.run(args, capture_output=True, text=True, env={**env, "FORCE_COLOR": "1"}, check=True)
    assert "\x1b[" in forced.stdout


def test_redirected_json_starts_with_the_data():
    out = subprocess.run([*PISTA, "analyze", str(fixture("gpu/host_sync_item")), "--format", "json"],
                         capture_output=True, text=True, check=True)
    assert out.stdout.startswith("{")


def test_did_you_mean_for_verbs_flags_and_rules():
    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([*PISTA, *args], capture_output=True, text=True, timeout=120)

    out = run("analyse", str(fixture("gpu/host_sync_item")))
    assert out.returncode == 2 and "did you mean analyze?" in out.stderr
    out = run("analyze", str(fixture("gpu/host_sync_item")), "--formt", "json")
    assert out.returncode == 2 and out.stderr.startswith("usage: pista analyze")  # the verb's usage
    assert "did you mean --format?" in out.stderr and not out.stdout
    out = run("explain", "host-synk")
    assert out.returncode == 2 and "did you mean host-sync?" in out.stderr and out.stderr.count("\n") == 1


def test_a_trace_from_stdin_and_outputs_in_the_current_folder(tmp_path):
    import gzip

    data = fixture("gpu/host_sync_item").read_bytes()
    out = subprocess.run([*PISTA, "analyze", "-", "--format", "json"], input=gzip.decompress(data),
                         capture_output=True, timeout=120, check=True)
    assert json.loads(out.stdout)["source"] == "<stdin>"
    # report and annotate write beside the user (the current folder), not beside the input
    subprocess.run([*PISTA, "report", str(fixture("gpu/host_sync_item"))], cwd=tmp_path, capture_output=True,
                   timeout=120, check=True)
    assert (tmp_path / "host_sync_item.report.html").exists()
    subprocess.run([*PISTA, "annotate", "-"], input=data, cwd=tmp_path, capture_output=True, timeout=120,
                   check=True)
    assert (tmp_path / "stdin.pista.json.gz").exists()


@pytest.mark.parametrize("gzipped", [False, True])
def test_a_big_trace_from_stdin_reads_as_the_file_does(gzipped):
    # big enough for the streamed reader, which reads ops' args back from its file: standard input's
    # copy is deleted once read ("No such file or directory" before)
    import gzip

    path = fixture("big_gpt_eager_20steps")
    data = path.read_bytes()
    piped = subprocess.run([*PISTA, "analyze", "-", "--format", "json"], input=data if gzipped else gzip.decompress(data),
                           capture_output=True, timeout=300)
    assert piped.returncode == 0, piped.stderr
    direct = subprocess.run([*PISTA, "analyze", str(path), "--format", "json"], capture_output=True, timeout=300,
                            check=True)
    a, b = json.loads(piped.stdout), json.loads(direct.stdout)
    assert a.pop("source") == "<stdin>" and b.pop("source") == str(path)
    assert a == b and a["findings"]


def test_sql_schema_needs_no_trace_and_csv_starts_with_the_header():
    out = subprocess.run([*PISTA, "sql", "--schema"], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.startswith("events:")
    out = subprocess.run([*PISTA, "sql", str(fixture("gpu/host_sync_item")), "SELECT count(*) AS n FROM events",
                          "--format", "csv"], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.splitlines()[0] == "n" and out.stdout.splitlines()[1].isdigit()


def test_a_hostile_trace_in_a_real_terminal_gets_colours_but_no_title_link_or_clear(tmp_path):
    """Colour on (a terminal), a trace whose names set the title, make links and clear the screen:
    only pista's own colour sequences reach the terminal; the names show as text."""
    import re

    from test_hostile_output import SHOWN, hostile_trace

    trace = hostile_trace(tmp_path, "gpu/host_sync_item_stack")
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR")}
    out = _in_pty([*PISTA, "analyze", str(trace)], 200, env)
    assert re.search(r"\x1b\[[0-9;]*m", out)
    assert not re.search(r"\x1b(?!\[[0-9;]*m)", out)  # nothing but colour (SGR) sequences
    assert "\u202e" not in out and "\x07" not in out and SHOWN in out


def test_top_kernels_with_one_short_name_say_their_op(analysis_of):
    # series_mlp_eager: AdamW(foreach)'s three biggest kernels are all multi_tensor_apply_kernel, template
    # instances launched by different foreach ops; the row names the op that launched each
    import raw

    from pista.render.terminal import kernel_line

    line = kernel_line(analysis_of("series_mlp_eager"))
    rows = line.split("; ")
    assert all(r.startswith("multi_tensor_apply_kernel (from aten::_foreach_") for r in rows), line
    name = "series_mlp_eager"
    events = raw.complete(name)
    launch = {e["args"]["correlation"]: e for e in events
              if e.get("cat") == "cuda_runtime" and "correlation" in e.get("args", {})}
    ops = [e for e in events if e.get("cat") == "cpu_op"]
    first = rows[0].split("(from ")[1].split(")")[0]
    # the kernel with the most time under that op's name: its launches sit inside calls of that op
    mta = [k for k in raw.complete(name, "kernel") if "multi_tensor_apply_kernel" in k["name"]]
    by_name: dict[str, float] = {}
    for k in mta:
        by_name[k["name"]] = by_name.get(k["name"], 0.0) + float(k["dur"])
    top = max(by_name, key=by_name.get)
    owners = {o["name"] for k in mta if k["name"] == top and (c := launch.get(k["args"]["correlation"]))
              for o in ops if o["name"].startswith("aten::_foreach_") and raw.inside(o, c)}
    assert first in owners


def _limited_memory() -> None:
    """In the child: 4 GiB of address space, so a layout that runs away fails fast, not the machine."""
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))


def test_a_huge_columns_is_clamped():
    # COLUMNS=1000000000: rich padded lines to a billion columns, out of memory (exit 2 after ~40 s)
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR")}
    proc = subprocess.run([*PISTA, "analyze", str(fixture("gpu/host_sync_item"))], capture_output=True, text=True,
                          env={**env, "COLUMNS": "1000000000"}, timeout=300, preexec_fn=_limited_memory)
    assert proc.returncode == 0, proc.stderr
    from pista.cli.common import MAX_WIDTH

    assert max(len(line) for line in proc.stdout.splitlines()) == MAX_WIDTH  # the panel spans it


@pytest.mark.parametrize("verb", [["analyze"], ["analyze", "--format", "json"], ["check"], ["check", "--format", "json"],
                                  ["table"], ["diff", "{t}"], ["whatif", "--no-syncs"]])
def test_an_ascii_stdout(verb):
    # LC_ALL=C PYTHONIOENCODING=ascii (common in containers): the µ sign raised UnicodeEncodeError, exit 3
    trace = str(fixture("gpu/host_sync_item"))
    args = [*PISTA, verb[0], trace, *[trace if a == "{t}" else a for a in verb[1:]]]
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR", "COLUMNS")}
    utf8 = subprocess.run(args, capture_output=True, env={**env, "PYTHONIOENCODING": "utf-8"}, timeout=300)
    ascii_ = subprocess.run(args, capture_output=True, env={**env, "LC_ALL": "C", "PYTHONIOENCODING": "ascii"},
                            timeout=300)
    assert ascii_.returncode == utf8.returncode in (0, 1), ascii_.stderr  # check fails on the findings
    text = ascii_.stdout.decode("ascii")  # ASCII throughout
    if "--format" in verb:  # the same document, read back
        assert json.loads(text) == json.loads(utf8.stdout)
        return
    assert len(text.splitlines()) == len(utf8.stdout.splitlines())  # the same lines, boxes in ASCII
    if "µs".encode() in utf8.stdout and verb[0] == "analyze":
        assert " us" in text and "\\u" not in text  # µs as torch writes it; nothing escaped
    else:
        assert "µ".encode() not in utf8.stdout or "\\u00b5" in text  # or as an escape


def _piped(args: list[str], **env: str) -> str:
    """stdout through a pipe (a file, `| grep`), with no COLUMNS: what a redirect gets."""
    clean = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES", "NO_COLOR", "FORCE_COLOR")}
    proc = subprocess.run(args, capture_output=True, text=True, env={**clean, **env}, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def _short(analysis, part):
    """A finding's text as the renderers for people write it (three significant digits)."""
    from pista.i18n._fmt import short_figures

    with short_figures():
        return part(analysis)


@pytest.mark.parametrize("name", ["gpu/host_sync_item", "seed_mm4096_warm"])
def test_a_pipe_gets_one_logical_line_per_line(name, analysis_of):
    # `pista analyze t | grep "Start here"` returned half a sentence: the text was hard-wrapped at 110
    # columns and padded with spaces, in a box; off a terminal each line is now one whole line
    from pista.analysis import analyze as analyze_trace

    trace = fixture(name)
    out = _piped([*PISTA, "analyze", str(trace)])
    lines = out.splitlines()
    assert not [line for line in lines if line != line.rstrip()]  # no padding
    assert not any(c in out for c in "│─╭╮╰╯")  # no box
    analysis = analyze_trace(trace)
    top = _short(analysis, lambda a: a.top_fix.fix_here)
    start = [line for line in lines if line.startswith("Start here: ")]
    assert len(start) == 1 and start[0].startswith(f"Start here: {top} (")  # the whole sentence on its line
    assert len(start[0]) > 110  # longer than the old wrap: not cut
    for f in analysis.findings:  # each finding's title line, with its rule, whole
        assert sum(line.startswith(f"{f.severity.value.upper():8s} {f.rule}: {f.title} (") for line in lines) >= 1


def test_a_terminal_still_wraps_at_its_width():
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR")}
    out = _in_pty([*PISTA, "analyze", str(fixture("gpu/host_sync_item"))], 100, {**env, "NO_COLOR": "1"})
    lines = out.replace("\r\n", "\n").splitlines()
    assert max(len(line) for line in lines) == 100  # the box spans the terminal
    assert any(line.startswith("╭") for line in lines)
    start = next(i for i, line in enumerate(lines) if line.startswith("Start here"))
    assert lines[start + 1].strip()  # the long top fix goes on onto the next line


def _finding_blocks(lines: list[str]) -> list[list[str]]:
    """The findings' blocks of the terminal text: from a severity's line to the next blank one."""
    import re

    heads = [i for i, line in enumerate(lines) if re.match(r"(CRITICAL|WARNING |INFO    ) [a-z0-9-]+: ", line)]
    blocks = []
    for i in heads:
        end = next((j for j in range(i + 1, len(lines)) if not lines[j].strip()), len(lines))
        blocks.append(lines[i:end])
    return blocks


@pytest.mark.parametrize("name", ["gpu/host_sync_item", "gpu/bert_as_written"])
def test_findings_are_brief_in_a_terminal_and_whole_with_v(name, analysis_of):
    # a finding printed 10-15 lines before its evidence: in a 100-column terminal it is now its title, a
    # message of at most 3 lines, at most 3 evidence rows and its fix in at most 2 lines
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR")}
    trace = str(fixture(name))
    out = _in_pty([*PISTA, "analyze", trace], 100, {**env, "NO_COLOR": "1"})
    blocks = _finding_blocks(out.replace("\r\n", "\n").splitlines())
    analysis = analysis_of(name)
    assert len(blocks) == len(analysis.findings) > 0
    for block in blocks:
        rows = [i for i, line in enumerate(block) if line.startswith("  - ")]
        fix = next(i for i, line in enumerate(block) if line.startswith("  fix: "))
        message = next(i for i, line in enumerate(block) if line.startswith("  "))  # after the title (wrapped)
        assert 1 <= (rows[0] if rows else fix) - message <= 3, block
        assert len(rows) <= 3, block
        assert len(block) - fix <= 2, block  # the fix and at most one more line
    # -v (into a pipe): every finding's message and advice whole, as the JSON has them
    full = _piped([*PISTA, "analyze", trace, "-v"])
    for f in analysis.findings:
        assert f"  {_short(f, lambda x: x.message)}\n" in full
        assert f"  fix: {_short(f, lambda x: x.advice)}\n" in full
    brief = _piped([*PISTA, "analyze", trace])
    assert len(brief.splitlines()) < len(full.splitlines())
    assert "-v: each finding in full" in brief and "-v: each finding in full" not in full
    assert "Self CPU time total" not in brief  # torch's 200-column table is `pista table`'s (or --table)
    assert f"pista table {trace}" in brief


def test_the_torch_table_on_request_is_pista_tables():
    trace = str(fixture("seed_mm4096_warm"))
    out = _piped([*PISTA, "analyze", trace, "--table"])
    table = _piped([*PISTA, "table", trace, "--sort-by", "cuda_time_total", "--row-limit", "15"])
    # the same rows as torch prints them (off a terminal without the spaces at the lines' ends)
    assert "\n".join(line.rstrip() for line in table.splitlines()) in out


def test_default_output_names_come_from_the_run_and_a_replaced_file_is_said(tmp_path):
    # every capture is OUT/trace.json.gz: the second report silently overwrote the first
    # (./trace.report.html); the default names now come from the run's folder
    import shutil

    for run in ("bert", "gpt"):
        (tmp_path / "runs" / run).mkdir(parents=True)
        shutil.copy(fixture("gpu/host_sync_item"), tmp_path / "runs" / run / "trace.json.gz")
    for run in ("bert", "gpt"):
        for verb in ("report", "annotate"):
            proc = subprocess.run([*PISTA, verb, f"runs/{run}/trace.json.gz"], cwd=tmp_path, capture_output=True,
                                  text=True, timeout=300, check=True)
            assert "replaced" not in proc.stderr
    made = sorted(p.name for p in tmp_path.iterdir() if p.is_file())
    assert made == ["bert.pista.json.gz", "bert.report.html", "gpt.pista.json.gz", "gpt.report.html"]
    # a later cycle's trace keeps its cycle; a trace with a name of its own keeps that name
    shutil.copy(fixture("gpu/host_sync_item"), tmp_path / "runs" / "bert" / "trace.cycle2.json.gz")
    subprocess.run([*PISTA, "report", "runs/bert/trace.cycle2.json.gz"], cwd=tmp_path, capture_output=True,
                   timeout=300, check=True)
    assert (tmp_path / "bert.cycle2.report.html").exists()
    # the same run again: the file is replaced, and the line that says where it wrote says so
    before = (tmp_path / "bert.report.html").stat().st_mtime_ns
    for verb in ("report", "annotate"):
        proc = subprocess.run([*PISTA, verb, "runs/bert/trace.json.gz"], cwd=tmp_path, capture_output=True, text=True,
                              timeout=300, check=True)
        assert "(replaced the file that was there)" in proc.stderr, proc.stderr
    assert (tmp_path / "bert.report.html").stat().st_mtime_ns >= before
