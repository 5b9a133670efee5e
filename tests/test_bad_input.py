"""Bad input: every verb that reads a trace answers a file it cannot use with one line on stderr
that names the file and what is wrong, and exit code 2; damage it can read around costs a notice.

`CASES` is also what `scripts/bad_input_table.py` turns into the table in docs/bad-inputs.md, so the
documented messages are the ones these tests see.
"""

from __future__ import annotations

import gzip
import json
import os
import random
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import fixture

from pista.cli import main

REAL = "seed_mm64_cold"  # a small real H200 trace: 241 events, kernels, memcpy, flows


def real_bytes(name: str = REAL) -> bytes:
    return gzip.decompress(fixture(name).read_bytes())


def real_doc(name: str = REAL) -> dict:
    return json.loads(real_bytes(name))


def kineto_bytes(doc: dict) -> bytes:
    """Re-serialise with Kineto's layout (one key per line inside events is not needed: any layout)."""
    return json.dumps(doc, indent=1).encode()


def event(name: str = "aten::mm", ts: object = 10.0, dur: object = 5.0, **extra: object) -> dict:
    return {"ph": "X", "cat": "cpu_op", "name": name, "pid": 1, "tid": 1, "ts": ts, "dur": dur, **extra}


def good_events(n: int = 3) -> list[dict]:
    return [event(f"aten::op{i}", ts=10.0 * i, dur=5.0) for i in range(n)]


def with_bad_event(bad: dict | str) -> bytes:
    """Three good events and one bad one (a dict, or raw JSON text spliced in)."""
    good = [json.dumps(e) for e in good_events()]
    bad_text = bad if isinstance(bad, str) else json.dumps(bad)
    return ('{"traceEvents": [' + ", ".join([good[0], bad_text, *good[1:]]) + "]}").encode()


def nested(depth: int) -> bytes:
    return b"[" * depth + b"]" * depth


def cut_real(fraction: float) -> bytes:
    data = real_bytes()
    return data[: int(len(data) * fraction)]


def zero_middle(count: int) -> bytes:
    """What a crash or power loss can leave: a block of the file zero-filled."""
    data = bytearray(real_bytes())
    at = len(data) // 2
    data[at : at + count] = bytes(count)
    return bytes(data)


def flip_inside_event() -> bytes:
    data = bytearray(real_bytes())
    at = data.index(b'"name"', len(data) // 2)  # the key of some event in the middle
    data[at + 2] = ord("\\")  # "n -> "\ : the string runs on, the event's JSON breaks
    return bytes(data)


@dataclass(frozen=True)
class Case:
    file: str  # the name pista is given (relative to the folder the case is made in)
    what: str  # the bad input, for the docs table
    make: Callable[[Path], None] | None  # writes the file; None: there is no file
    rc: int  # expected exit code of `pista table` / `pista analyze`
    says: str  # a phrase stderr must hold (case-insensitive)


def _write(data: bytes | Callable[[], bytes]) -> Callable[[Path], None]:
    def make(path: Path) -> None:
        path.write_bytes(data() if callable(data) else data)

    return make


def _mkdir(path: Path) -> None:
    path.mkdir()


CASES = [
    Case("missing.json", "a file that does not exist", None, 2, "no such file"),
    # `analyze` reads a folder of per-rank traces, `table` wants one file: both refuse an empty folder
    Case("traces", "an empty directory", _mkdir, 2, ""),
    Case("empty.json", "an empty file", _write(b""), 2, "empty file"),
    Case("blank.json", "only whitespace", _write(b"  \n\t\n"), 2, "empty file"),
    Case("notes.json", "text, not JSON", _write(b"hello world\n"), 2, "not JSON"),
    Case("null.json", "the JSON value `null`", _write(b"null"), 2, "not JSON"),
    Case("numbers.json", "JSON, a list of numbers `[1,2]`", _write(b"[1,2]"), 2, "not a chrome trace"),
    Case("foo.json", 'JSON, an object without events `{"foo": 1}`', _write(b'{"foo": 1}'), 2,
         "no 'traceEvents'"),
    Case("events5.json", '`{"traceEvents": 5}`', _write(b'{"traceEvents": 5}'), 2, "not a list of events"),
    Case("noevents.json", '`{"traceEvents": []}`', _write(b'{"traceEvents": []}'), 2, "holds no events"),
    Case("junk_entries.json", "`traceEvents` of non-objects", _write(b'{"traceEvents": [1, "a", null, []]}'), 2,
         "not a chrome trace"),
    Case("broken.json.gz", "a broken gzip stream", _write(b"\x1f\x8b\x08\x00" + b"\x13\x37" * 64), 2,
         "broken gzip"),
    Case("hollow.json.gz", "a gzip stream of nothing", _write(gzip.compress(b"")), 2, "holds nothing"),
    Case("random.bin", "random bytes", _write(random.Random(7).randbytes(4096)), 2, "binary data"),
    Case("trace.zip", "a zip archive", _write(b"PK\x03\x04" + bytes(60)), 2, "zip archive"),
    Case("ts_soon.json", 'one event with `"ts": "soon"`', _write(with_bad_event(event(ts="soon"))), 0,
         "skipped 1 malformed event"),
    Case("dur_null.json", 'one event with `"dur": null`', _write(with_bad_event(event(dur=None))), 0,
         "skipped 1 malformed event"),
    Case("negative_dur.json", "one event with a negative duration", _write(with_bad_event(event(dur=-5.0))), 0,
         "skipped 1 malformed event"),
    Case("all_bad.json", "every event malformed", _write(json.dumps({"traceEvents": [event(ts="soon")] * 3}).encode()),
         2, "none of the 3 event"),
    Case("latin1.json", "bytes that are not UTF-8 in a name (Latin-1 `caf\\xe9`)",
         _write(with_bad_event('{"ph": "X", "name": "caf\u00e9"}').replace("\u00e9".encode(), b"\xe9")), 0,
         "not UTF-8"),
    Case("huge_ids.json", "External id, correlation and pid of 2**70 (beyond int64)",
         _write(with_bad_event(event(pid=2**70, args={"External id": 2**70, "correlation": 2**70}))), 0,
         "overflow int64"),
    Case("deep.json", "JSON nested 100,000 levels deep", _write(nested(100_000)), 2, "nested too deeply"),
    Case("deep_args.json", "one event whose args nest 100,000 levels deep",
         _write(with_bad_event('{"ph": "X", "name": "x", "args": ' + nested(100_000).decode() + "}")), 0,
         "skipped 1 malformed event"),
    Case("huge_name.json", "an event name of 8 MB", _write(lambda: with_bad_event(event(name="x" * (8 << 20)))), 0, ""),
    Case("nan_ts.json", "bare `NaN` / `Infinity` tokens as ts and dur",
         _write(with_bad_event('{"ph": "X", "name": "x", "ts": NaN, "dur": Infinity}')), 0, "skipped 1 malformed"),
    Case("kineto_na.json", 'old Kineto: `"memory bandwidth (GB/s)": N/A` (unquoted)',
         _write(with_bad_event('{"ph": "X", "cat": "Memcpy", "name": "Memcpy HtoD", "pid": 0, "tid": 7, "ts": 12,'
                               ' "dur": 0, "args": {"bytes": 8, "memory bandwidth (GB/s)": N/A}}')), 0,
         "bare NaN/Infinity/N/A"),
    Case("cut_half.json", "a real trace cut off at 50% (mid-write)", _write(lambda: cut_real(0.5)), 0, "cut off"),
    Case("cut_999.json", "a real trace cut off at 99.9%", _write(lambda: cut_real(0.999)), 0, "cut off"),
    Case("cut.json.gz", "a gzipped real trace, the .gz cut off at 60%",
         _write(lambda: gzip.compress(real_bytes())[: int(len(gzip.compress(real_bytes())) * 0.6)]), 0, "cut off"),
    Case("cut_first.json", "cut off inside the first event", _write(lambda: cut_real(0.02)), 2,
         "cut off before the first complete event"),
    Case("flipped.json", "a real trace with one corrupted byte in the middle", _write(flip_inside_event), 0,
         "skipped 1 malformed event"),
    Case("zeroed.json", "a real trace with 4,096 bytes zeroed (NUL) in the middle", _write(lambda: zero_middle(4096)),
         0, "4,096 byte(s) of the file are zeroed"),
    Case("zero_tail.json", "a real trace cut off at 50%, the rest zero-filled (power loss)",
         _write(lambda: cut_real(0.5) + bytes(len(real_bytes()) - len(cut_real(0.5)))), 0, "zeroed (NUL)"),
    Case("trailing.json", "junk after the end of a real trace", _write(lambda: real_bytes() + b"\n}}\x00junk"), 0,
         "junk after the end"),
    Case("utf16.json", "a real trace saved as UTF-16", _write(lambda: real_bytes().decode().encode("utf-16")), 0,
         "UTF-16"),
]


def case_by_file(file: str) -> Case:
    return next(c for c in CASES if c.file == file)


def make_case(case: Case, folder: Path) -> str:
    if case.make is not None:
        case.make(folder / case.file)
    return case.file


def check_stderr(case: Case, rc: int, err: str) -> None:
    lines = err.splitlines()
    assert "Traceback" not in err
    assert rc == case.rc, err
    assert all(line.startswith(("pista: error: ", "pista: notice: ")) for line in lines), err
    if rc == 2:
        assert len(lines) == 1 and lines[0].startswith(f"pista: error: {case.file}: "), err
    else:
        assert all(line.startswith(f"pista: notice: {case.file}: ") for line in lines), err
    assert case.says.lower() in err.lower(), err


@pytest.mark.parametrize("verb", ["table", "analyze"])
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.file)
def test_bad_input(case, verb, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    name = make_case(case, tmp_path)
    rc = main([verb, name])
    check_stderr(case, rc, capsys.readouterr().err)


# The nastiest, through a real process: what a user sees, exit code included.
NASTY = ["deep.json", "random.bin", "cut_first.json", "broken.json.gz", "numbers.json", "traces"]


@pytest.mark.parametrize("verb", ["table", "analyze", "report", "annotate", "diff", "diff second"])
def test_nasty_inputs_in_a_subprocess(verb, tmp_path):
    good = str(fixture("seed_mm64_warm"))
    for file in NASTY if verb in ("table", "analyze", "report") else NASTY[:3]:
        case = case_by_file(file)
        make_case(case, tmp_path)
        argv = {"diff": ["diff", file, good], "diff second": ["diff", good, file],
                "annotate": ["annotate", file, "-o", "out.json"]}.get(verb, [verb, file])
        proc = subprocess.run([sys.executable, "-m", "pista", *argv], cwd=tmp_path, capture_output=True,
                              text=True, timeout=120, env={**os.environ, "PISTA_DEBUG": ""})
        if proc.returncode == 2 and "invalid choice" in proc.stderr:
            pytest.skip(f"no `pista {argv[0]}` in this checkout")
        check_stderr(case, proc.returncode, proc.stderr)
        assert not list(tmp_path.glob("*.html")) and not (tmp_path / "out.json").exists(), \
            "a failed verb must not leave an output behind"


def test_the_bad_event_is_the_only_one_skipped(tmp_path):
    from pista.trace.load import load_trace

    for file in ("ts_soon.json", "dur_null.json", "negative_dur.json", "nan_ts.json", "deep_args.json"):
        make_case(case_by_file(file), tmp_path)
        trace = load_trace(tmp_path / file)
        assert trace.names == [e["name"] for e in good_events()], file
        assert (trace.dur == 5000).all()


def test_old_kineto_bare_tokens_keep_their_event(tmp_path):
    from pista.trace.load import load_trace

    make_case(case_by_file("kineto_na.json"), tmp_path)
    trace = load_trace(tmp_path / "kineto_na.json")
    memcpy = trace.names.index("Memcpy HtoD")
    i = list(trace.name).index(memcpy)
    assert trace.event_category(i) == "gpu_memcpy"
    assert trace.args(i) == {"bytes": 8, "memory bandwidth (GB/s)": "N/A"}
    assert len(trace) == 4


def test_a_bare_token_inside_a_string_is_left_alone(tmp_path):
    from pista.trace.load import load_trace

    name = 'ratio: inf, [N/A'
    raw = with_bad_event('{"ph": "X", "name": ' + json.dumps(name) + ', "args": {"x": inf}}')
    path = tmp_path / "t.json"
    path.write_bytes(raw)
    trace = load_trace(path)
    assert name in trace.names
    assert any("bare NaN" in n for n in trace.notices)


def test_overflowing_ids(tmp_path):
    from pista.trace.load import load_trace

    make_case(case_by_file("huge_ids.json"), tmp_path)
    trace = load_trace(tmp_path / "huge_ids.json")
    assert len(trace) == 4
    big = trace.names.index("aten::mm")
    i = list(trace.name).index(big)
    assert trace.external_id[i] == -1 and trace.correlation[i] == -1
    assert trace.pid[i] not in (1, -1)  # a lane of its own, not merged into pid 1 or the overhead lane


def test_invalid_utf8_is_replaced_not_dropped(tmp_path):
    from pista.trace.load import load_trace

    make_case(case_by_file("latin1.json"), tmp_path)
    trace = load_trace(tmp_path / "latin1.json")
    assert "caf\ufffd" in trace.names and len(trace) == 4


def test_huge_single_string_loads(tmp_path):
    from pista.trace.load import load_trace

    make_case(case_by_file("huge_name.json"), tmp_path)
    trace = load_trace(tmp_path / "huge_name.json")
    assert max(len(n) for n in trace.names) == 8 << 20


def test_the_cli_never_shows_a_traceback_for_a_bug(monkeypatch, capsys):
    """A bug still ends in one line (exit 3), with the traceback behind PISTA_DEBUG."""
    import pista.cli.table as table_verb

    def broken(args):
        raise ValueError("boom\nsecond line")

    monkeypatch.setattr(table_verb, "run", broken)
    monkeypatch.delenv("PISTA_DEBUG", raising=False)
    rc = main(["table", "x.json"])
    err = capsys.readouterr().err
    assert rc == 3 and err.count("\n") == 1 and "internal error: ValueError: boom second line" in err
    monkeypatch.setenv("PISTA_DEBUG", "1")
    with pytest.raises(ValueError):
        main(["table", "x.json"])


def test_the_docs_table_is_current():
    """docs/bad-inputs.md shows what pista says today: regenerate it with scripts/bad_input_table.py --write."""
    import importlib.util

    root = Path(__file__).resolve().parent.parent
    spec = importlib.util.spec_from_file_location("bad_input_table", root / "scripts" / "bad_input_table.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    doc = (root / "docs" / "bad-inputs.md").read_text()
    assert script.with_table(doc, script.table()) == doc, "run python scripts/bad_input_table.py --write"
