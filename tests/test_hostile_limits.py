"""The reader, the settings and the CLI against inputs made to exhaust them (the reliability
issue's items 3-24): regexes and nesting that went quadratic, unbounded reads of standard input and
of gzip bombs, settings and peaks files of the wrong shape, mistyped trace fields.

Quadratic cases are timed at two sizes in one run (tests/scaling.py) and must grow about linearly;
memory cases run pista in a subprocess under an address-space limit.
"""

from __future__ import annotations

import gzip
import json
import os
import resource
import shutil
import subprocess
import sys
import time
import zlib
from pathlib import Path

import pytest
from conftest import FIXTURES, big_copy, fixture
from scaling import growth

from pista.cli import main
from pista.cli.common import STALE_TEMP_S, write_output
from pista.errors import BadTrace
from pista.table import build_table
from pista.trace import load, stream
from pista.trace.facts import derive
from pista.trace.load import load_trace

PISTA = [sys.executable, "-m", "pista"]
REAL = "seed_mm64_cold"  # a small real H200 trace
# Sizes 8x apart: linear work grows ~8x (less where a fixed cost counts), quadratic ~64x; the bound
# sits between, with room for a busy machine's noise.
SIZE_STEP = 8
LINEAR_BOUND = 20


def run_cli(*argv: object, env: dict[str, str] | None = None, cwd: Path | None = None, timeout: float = 120,
            stdin: bytes | None = None, preexec=None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*PISTA, *argv], capture_output=True, timeout=timeout, cwd=cwd, input=stdin,
                          env={**os.environ, "PISTA_DEBUG": "", **(env or {})}, preexec_fn=preexec)


def one_error_line(proc: subprocess.CompletedProcess, says: str) -> None:
    err = proc.stderr.decode(errors="replace")
    lines = err.splitlines()
    assert proc.returncode == 2 and len(lines) == 1, err
    assert lines[0].startswith("pista: error: ") and says in lines[0], err


def op(name: str = "aten::mm", ts: float = 10.0, dur: float = 5.0, **extra: object) -> dict:
    return {"ph": "X", "cat": "cpu_op", "name": name, "pid": 1, "tid": 1, "ts": ts, "dur": dur, **extra}


# -- 3: the bare-NaN repair's regex ----------------------------------------------------------


def _cut_in_escaped_quotes(size: int) -> bytes:
    # one line, a bare NaN (so the repair runs), then a string cut off inside a run of \"
    return b'{"traceEvents": [{"ph": "X", "name": "a", "ts": 1, "dur": NaN, "args": {"s": "' + b'\\"' * (size // 2)


def test_a_bare_nan_cut_off_in_escaped_quotes_is_linear():
    # each '"' of the run started a string match that ran to the end and failed: 64 KB took 9.7 s
    def make(size: int):
        data = _cut_in_escaped_quotes(size)

        def call() -> None:
            with pytest.raises(BadTrace, match="cut off"):
                load.decode_trace(data, "cut.json", [])
        return call

    assert growth(make, 8 << 10, SIZE_STEP * (8 << 10)) < LINEAR_BOUND


def test_a_small_gzip_of_escaped_quotes_is_refused_quickly(tmp_path):
    path = tmp_path / "quotes.json.gz"
    path.write_bytes(gzip.compress(_cut_in_escaped_quotes(256 << 10)))
    assert path.stat().st_size < 2000
    one_error_line(run_cli("table", path.name, cwd=tmp_path, timeout=30), "cut off")


# -- 4: a deep nest of host events -----------------------------------------------------------


def _nested_trace(path: Path, count: int) -> Path:
    """`count` host events each inside the one before (a real trace's host events' names, args and
    categories, ProfilerSteps and python frames among them, in turn)."""
    doc = json.loads(gzip.decompress(fixture(REAL).read_bytes()))
    host = [e for e in doc["traceEvents"] if e.get("ph") == "X"
            and e.get("cat") in ("cpu_op", "user_annotation", "python_function", "cuda_runtime")]
    nest = [{**host[k % len(host)], "pid": 1, "tid": 1, "ts": float(k), "dur": float(2 * (count - k))}
            for k in range(count)]
    doc["traceEvents"] = [e for e in doc["traceEvents"] if e.get("ph") == "M"] + nest
    path.write_text(json.dumps(doc))
    return path


def test_a_deep_nest_of_host_events_is_linear(tmp_path):
    # the depth, the table's sums up the tree and its stacks climbed one level per pass over every
    # event: 100,000 nested ops took 36 s in every verb (and --group-by-stack 77 s)
    def make(count: int):
        path = _nested_trace(tmp_path / f"nest{count}.json", count)

        def call() -> None:
            build_table(derive(load_trace(path)), group_by_stack_n=5)
        return call

    assert growth(make, 2500, SIZE_STEP * 2500) < LINEAR_BOUND


# -- 6 and 23: blocks of NULs ---------------------------------------------------------------

# What a pista process takes before it reads anything (the interpreter, numpy with one BLAS thread,
# msgspec), with room to spare: the address-space limits below add the input's share to it.
BASE_ADDRESS_SPACE = 256 << 20


def limited(address_space: int):
    """A preexec_fn capping the child's address space (RLIMIT_AS) at `address_space` bytes."""
    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (address_space, address_space))
    return cap


def nul_bomb(path: Path, megabytes: int) -> Path:
    """Two events with `megabytes` of NULs between them (what a crash leaves), gzipped ~1000x."""
    packer = zlib.compressobj(9, zlib.DEFLATED, 31)
    parts = [packer.compress(('{"traceEvents": [' + json.dumps(op(ts=0.0)) + ",").encode())]
    block = bytes(1 << 20)
    parts += [packer.compress(block) for _ in range(megabytes)]
    parts += [packer.compress((json.dumps(op(ts=20.0)) + "]}").encode()), packer.flush()]
    path.write_bytes(b"".join(parts))
    return path


def test_a_gzip_bomb_of_nuls_is_read_in_little_more_than_its_size(tmp_path):
    # 256 MB of NULs from 256 KB: the pieces and their join, the text decoded to check its UTF-8 and
    # the salvage's slices held it 3 times over (a 4 MB .gz peaked at 12.3 GiB)
    unpacked = 256 << 20
    bomb = nul_bomb(tmp_path / "nuls.json.gz", unpacked >> 20)
    assert bomb.stat().st_size < 400_000
    proc = run_cli("table", bomb.name, cwd=tmp_path, env={"OPENBLAS_NUM_THREADS": "1"},
                   preexec=limited(BASE_ADDRESS_SPACE + unpacked * 3 // 2))
    err = proc.stderr.decode()
    assert proc.returncode == 0, err
    assert "zeroed (NUL)" in err and "cut off" not in err


@pytest.mark.parametrize("between", [b",\n  " + bytes(5000), bytes(5000), b", " + bytes(5000) + b"  ",
                                     bytes(5000) + b",\n"])
def test_a_block_of_nuls_between_two_events_keeps_both(between):
    # the second event was read as the end of the first, and both as a cut-off file
    data = b'{"traceEvents": [' + json.dumps(op(ts=0.0)).encode() + between + json.dumps(op(ts=20.0)).encode() \
        + b"]}"
    trace = load.decode_trace(data, "nuls.json", [])
    assert len(trace) == 2
    assert not [n for n in trace.notices if "cut off" in n]
    assert [n for n in trace.notices if "5,000 byte(s) of the file are zeroed" in n]


def test_nuls_to_the_end_are_a_cut_off_file():
    data = b'{"traceEvents": [' + json.dumps(op(ts=0.0)).encode() + b"," + bytes(5000)
    trace = load.decode_trace(data, "nuls.json", [])
    assert len(trace) == 1 and [n for n in trace.notices if "cut off" in n]


# -- 8: standard input ----------------------------------------------------------------------


def test_endless_binary_standard_input_is_refused_at_once(tmp_path):
    # `cat /dev/zero | pista table -` was read whole: 2.9 GiB in 5 s, and on
    with open("/dev/zero", "rb") as zeros:
        proc = subprocess.run([*PISTA, "table", "-"], stdin=zeros, capture_output=True, timeout=60, cwd=tmp_path,
                              env={**os.environ, "PISTA_DEBUG": "", "OPENBLAS_NUM_THREADS": "1"},
                              preexec_fn=limited(BASE_ADDRESS_SPACE))
    one_error_line(proc, "-: not JSON: binary data")


def test_standard_input_past_the_limit_is_refused_without_holding_it(tmp_path):
    # 8 MB of whitespace, past a 1 MB limit: copied a block at a time until it passes, never whole
    proc = run_cli("table", "-", stdin=b" " * (8 << 20), cwd=tmp_path,
                   env={"PISTA_MAX_UNPACKED": str(1 << 20), "OPENBLAS_NUM_THREADS": "1"},
                   preexec=limited(BASE_ADDRESS_SPACE))
    one_error_line(proc, "-: standard input passes 1,048,576 bytes")


def test_a_damaged_trace_on_standard_input_is_named_dash(tmp_path):
    # the error named the temporary copy (/tmp/pista-stdin-.../stdin.json)
    one_error_line(run_cli("table", "-", stdin=b'{"traceEvents": [{"ph": ', cwd=tmp_path), "pista: error: -: cut off")


# -- 21: mistyped trace fields --------------------------------------------------------------


def _with(name: str, change) -> dict:
    doc = json.loads(gzip.decompress(fixture(name).read_bytes()))
    change(doc)
    return doc


def _device_field(key: str, value: object):
    def change(doc: dict) -> None:
        for props in doc["deviceProperties"]:
            props[key] = value
    return change


def _memory_bytes(value: int):
    def change(doc: dict) -> None:
        for event in doc["traceEvents"]:
            if event.get("name") == "[memory]":
                event["args"]["Bytes"] = value
                break
    return change


def _sequence_numbers(value: object):
    def change(doc: dict) -> None:
        for event in doc["traceEvents"]:
            if "Sequence number" in event.get("args", {}):
                event["args"]["Sequence number"] = value
    return change


@pytest.mark.parametrize(("name", "change"), [
    ("gpu/memory_leak", _device_field("id", "zero")),
    ("gpu/memory_leak", _device_field("id", [0])),
    ("gpu/memory_leak", _device_field("totalGlobalMem", "lots")),
    ("gpu/memory_leak", _device_field("totalGlobalMem", [1])),
    ("gpu/memory_leak", _memory_bytes(2**64)),
    ("gpu/memory_leak", _memory_bytes(-(2**64))),
    ("gpu/attn_manual", _sequence_numbers([1])),
    ("gpu/attn_manual", _sequence_numbers(2**70)),
], ids=["id-text", "id-list", "mem-text", "mem-list", "bytes-2^64", "bytes--2^64", "seq-list", "seq-2^70"])
def test_mistyped_trace_fields_are_tolerated(tmp_path, capsys, name, change):
    # exit 3 before: int() of a text or a list, 2^64 into an int64 column, a list as a set member
    path = tmp_path / "mistyped.json"
    path.write_text(json.dumps(_with(name, change)))
    for argv in (["analyze", str(path)], ["table", "--group-by-stack", "3", str(path)]):
        assert main(argv) in (0, 1), capsys.readouterr().err
    assert "internal error" not in capsys.readouterr().err


# -- 15, 16, 17: writing outputs --------------------------------------------------------------

PEAKS = {"name": "mine", "tflops": {"bf16": 1200, "fp32": 80}, "hbm_tbps": 5.0}


@pytest.mark.parametrize("how", ["same path", "symlink", "hard link"])
def test_an_output_onto_the_peaks_file_is_refused(tmp_path, capsys, how):
    # `pista report T --peaks P -o P` wrote the page over the peaks file
    peaks = tmp_path / "peaks.json"
    peaks.write_text(json.dumps(PEAKS))
    target = {"same path": peaks, "symlink": tmp_path / "link.json", "hard link": tmp_path / "hard.json"}[how]
    if how == "symlink":
        target.symlink_to(peaks)
    elif how == "hard link":
        os.link(peaks, target)
    rc = main(["report", str(fixture(REAL)), "--peaks", str(peaks), "-o", str(target)])
    err = capsys.readouterr().err
    assert rc == 2 and "refusing to overwrite the input peaks file" in err and err.count("\n") == 1
    assert json.loads(peaks.read_text()) == PEAKS


@pytest.mark.parametrize("name", ["r" * 250 + ".html", "é" * 122 + ".html", "r" * 255])
def test_output_names_up_to_the_file_system_limit_are_written(tmp_path, name):
    # the temp file's name (.NAME.PID.RANDOM.tmp) passed 255 bytes for names of 231-255 bytes
    assert 240 <= len(os.fsencode(name)) <= 255
    write_output(tmp_path / name, "page")
    assert os.listdir(tmp_path) == [name] and (tmp_path / name).read_text() == "page"


_KILLED_WRITER = """
import sys, time
from pathlib import Path
from pista.cli.common import write_output

def pieces():
    yield b"x" * (1 << 20)
    Path(sys.argv[2]).write_text("writing")
    time.sleep(60)
    yield b"never"

write_output(sys.argv[1], pieces())
"""


def test_a_temp_file_left_by_a_killed_write_is_removed_by_the_next(tmp_path):
    # a SIGKILL mid-write left a hidden temp file for good
    out, ready = tmp_path / "out" / "report.html", tmp_path / "ready"
    out.parent.mkdir()
    writer = subprocess.Popen([sys.executable, "-c", _KILLED_WRITER, str(out), str(ready)])
    try:
        for _ in range(600):
            if ready.exists() or writer.poll() is not None:
                break
            time.sleep(0.05)
        assert ready.exists()
    finally:
        writer.kill()
        writer.wait()
    left = [p for p in out.parent.iterdir() if p.name != "report.html"]
    assert len(left) == 1 and left[0].stat().st_size == 1 << 20
    # the temp file of a live process (this one) is not ours to remove, however old
    live = out.parent / f".other.html.pista-{os.getpid()}-0123abcd.tmp"
    live.write_text("busy")
    old = time.time() - 2 * STALE_TEMP_S
    for path in (left[0], live):
        os.utime(path, (old, old))
    write_output(out.parent / "other.html", "page")
    assert sorted(p.name for p in out.parent.iterdir()) == sorted([live.name, "other.html"])


# -- 22: a symbolic link in a rank folder -----------------------------------------------------


@pytest.mark.parametrize("nested", [False, True])
def test_a_symlink_in_a_rank_folder_is_skipped_not_followed(tmp_path, nested):
    # followed before: a link to a secret file failed the folder with the file's first 20 bytes quoted
    secret = tmp_path / "secret.txt"
    secret.write_text("SECRET-TOKEN-0123456789 and more")
    folder = tmp_path / "job"
    ranks = folder / "node0" if nested else folder
    ranks.mkdir(parents=True)
    for rank in (0, 1):
        shutil.copy(FIXTURES / "gloo" / "balanced_2" / f"rank-{rank}.json.gz", ranks / f"rank-{rank}.json.gz")
    (ranks / "rank-2.json").symlink_to(secret)
    if nested:
        (folder / "elsewhere").symlink_to(tmp_path, target_is_directory=True)  # a linked folder is not entered
    proc = run_cli("analyze", str(folder), cwd=tmp_path)
    out = proc.stdout.decode() + proc.stderr.decode()
    assert proc.returncode in (0, 1), out
    assert "SECRET" not in out
    assert f"skipped {2 if nested else 1} symbolic link(s) in {folder}" in out


# -- 7: a big trace damaged after its event list ----------------------------------------------


@pytest.fixture(scope="module")
def big_trace(tmp_path_factory) -> Path:
    """A 64 MB trace (a real one's steps repeated), past the streamed reader's threshold."""
    path = tmp_path_factory.mktemp("big") / "big.json"
    big_copy("series_mlp_eager", path, 64 << 20)
    assert path.stat().st_size >= load.STREAM_MIN_BYTES
    return path


def test_a_big_trace_with_junk_at_the_end_is_streamed(big_trace, tmp_path):
    # 12 bytes of junk sent the file to the in-memory reader, read whole (a 560 MB copy took 2.0 GiB
    # where the clean one takes 210 MiB): now it is streamed, within the clean file's address space
    junk = tmp_path / "junk.json"
    junk.write_bytes(big_trace.read_bytes() + b"garbage12345")
    trace = load_trace(junk)
    assert isinstance(trace.raw_args, stream.OffsetArgs)
    assert trace.notices == ["ignored 12 byte(s) of junk after the end of the trace"]
    proc = run_cli("table", junk.name, cwd=tmp_path, env={"OPENBLAS_NUM_THREADS": "1"},
                   preexec=limited(BASE_ADDRESS_SPACE + junk.stat().st_size))
    assert proc.returncode == 0, proc.stderr.decode()


def test_a_big_trace_cut_in_the_keys_after_its_events_is_streamed(big_trace, tmp_path):
    data = big_trace.read_bytes()
    cut = tmp_path / "cut.json"
    cut.write_bytes(data[: data.rindex(b'"traceName"') + 14])
    trace = load_trace(cut)
    assert isinstance(trace.raw_args, stream.OffsetArgs)
    assert len(trace.notices) == 1 and trace.notices[0].startswith("the file is cut off mid-write after its event list")
    whole = load.decode_trace(cut.read_bytes(), str(cut), [])
    assert whole.notices == trace.notices and len(whole) == len(trace)
