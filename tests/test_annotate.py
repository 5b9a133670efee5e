"""`pista annotate`: the trace with the findings as markers; the original events untouched."""

from __future__ import annotations

import codecs
import gzip
import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from decimal import Decimal

import msgspec
import pytest
from conftest import H200_TRACES, fixture

from pista.cli import main
from pista.render import annotated
from pista.render.annotated import CATEGORY, PROCESS_NAME
from pista.trace.load import load_trace
from pista.trace.model import PH_COMPLETE, PH_INSTANT


def annotate(tmp_path, name: str, out_name: str = "annotated.json.gz"):
    out = tmp_path / out_name
    assert main(["annotate", str(fixture(name)), "-o", str(out)]) == 0
    return out


@pytest.mark.parametrize("name", ["seed_mm64_cold", "seed_mm4096_warm"])
def test_markers_sit_at_the_findings_evidence(tmp_path, analysis_of, name):
    analysis = analysis_of(name)
    assert analysis.findings
    trace = load_trace(annotate(tmp_path, name))
    pista_pid = next(pid for pid, label in trace.process_names.items() if label == PROCESS_NAME)
    marks = [i for i in range(len(trace)) if trace.event_category(i) == CATEGORY]
    assert marks and all(int(trace.pid[i]) == pista_pid for i in marks)
    spans = sorted((int(trace.ts[i]), int(trace.dur[i]), trace.event_name(i)) for i in marks
                   if trace.ph[i] == PH_COMPLETE)
    expected = sorted((round(e.ts_us * 1000), round(e.dur_us * 1000), e.name)
                      for f in analysis.findings for e in f.evidence if e.dur_us > 0)
    assert len(spans) == len(expected)
    for (ts, dur, nm), (ets, edur, enm) in zip(spans, expected, strict=True):
        assert nm == enm and abs(ts - ets) <= 1 and abs(dur - edur) <= 1
    # one instant per finding at its earliest evidence, on the finding's own named track
    instants = {trace.args(i)["rule"]: int(trace.ts[i]) for i in marks
                if trace.ph[i] == PH_INSTANT and "message" in trace.args(i)}
    for f in analysis.findings:
        assert abs(instants[f.rule] - round(min(e.ts_us for e in f.evidence) * 1000)) <= 1
    tracks = {label for (pid, _), label in trace.thread_names.items() if pid == pista_pid}
    assert {f"{f.severity.value} {f.rule}" for f in analysis.findings} <= tracks


def test_original_events_are_kept_byte_for_byte(tmp_path):
    out = annotate(tmp_path, "seed_mm64_cold")
    original = gzip.decompress(fixture("seed_mm64_cold").read_bytes())
    annotated = gzip.decompress(out.read_bytes())
    top = msgspec.json.Decoder(dict[str, msgspec.Raw])
    before, after = top.decode(original), top.decode(annotated)
    assert list(after) == list(before)
    for key in before:
        if key != "traceEvents":
            assert bytes(after[key]) == bytes(before[key]), key
    old_events = bytes(before["traceEvents"]).rstrip()[:-1].rstrip()  # without the closing ]
    assert bytes(after["traceEvents"]).startswith(old_events)
    old, new = json.loads(original)["traceEvents"], json.loads(annotated)["traceEvents"]
    assert new[: len(old)] == old
    assert all(e.get("cat") == CATEGORY or e.get("ph") == "M" for e in new[len(old):])


def test_the_annotated_trace_analyzes_the_same(tmp_path, analysis_of):
    from pista.analysis import analyze

    again = analyze(annotate(tmp_path, "seed_mm4096_warm"))
    first = analysis_of("seed_mm4096_warm")
    assert again.summary.self_cpu_total_us == first.summary.self_cpu_total_us
    assert again.summary.self_device_total_us == first.summary.self_device_total_us
    assert again.rules_fired == first.rules_fired


def test_plain_json_output_and_input_left_alone(tmp_path):
    src = tmp_path / "in.json.gz"
    src.write_bytes(fixture("seed_mm64_warm").read_bytes())
    before = src.read_bytes()
    out = tmp_path / "out.json"
    assert main(["annotate", str(src), "-o", str(out)]) == 0
    assert out.read_bytes().lstrip()[:1] == b"{"  # not gzipped: the name does not end in .gz
    json.loads(out.read_bytes())
    assert main(["annotate", str(src), "-o", str(src)]) == 2
    assert src.read_bytes() == before


def test_a_cut_off_trace_is_a_one_line_error(tmp_path, capsys):
    data = gzip.decompress(fixture("seed_mm64_warm").read_bytes())
    cut = tmp_path / "cut.json"
    cut.write_bytes(data[: len(data) // 2])
    assert main(["annotate", str(cut), "-o", str(tmp_path / "o.json")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("pista: error:") and "cannot annotate" in err[-1]
    assert not (tmp_path / "o.json").exists()


def _ns(us: Decimal | float) -> int:
    return int(round(Decimal(us) * 1000)) if isinstance(us, Decimal) else int(round(us * 1000.0))


def _crossing(spans: list[tuple[int, int]]) -> tuple[tuple[int, int], tuple[int, int]] | None:
    """Two spans on one track that overlap without one holding the other (what Perfetto mis-draws)."""
    open_: list[tuple[int, int]] = []
    for start, end in sorted(spans, key=lambda s: (s[0], -s[1])):
        while open_ and open_[-1][1] <= start:
            open_.pop()
        if open_ and end > open_[-1][1]:
            return open_[-1], (start, end)
        open_.append((start, end))
    return None


@pytest.mark.parametrize("name", H200_TRACES)
def test_markers_on_one_track_never_partly_overlap(analysis_of, name):
    analysis = analysis_of(name)
    if not analysis.findings:
        pytest.skip("no findings")
    original = gzip.decompress(fixture(name).read_bytes())
    # Decimal: the written µs read back exactly, so the ns compare without float slack
    events = json.loads(annotated.render(original, analysis), parse_float=Decimal)["traceEvents"]
    pid = annotated.marker_pid(analysis)
    mine = [e for e in events if e.get("pid") == pid]
    names = {e["tid"]: e["args"]["name"] for e in mine if e.get("name") == "thread_name"}
    by_track: dict[int, list[tuple[int, int]]] = {}
    for e in mine:
        if e["ph"] == "X":
            start = _ns(e["ts"])
            by_track.setdefault(e["tid"], []).append((start, start + _ns(e["dur"])))
    for tid, spans in by_track.items():
        assert _crossing(spans) is None, (names.get(tid), _crossing(spans))
    # every piece of evidence still has its marker, on a track named after its finding
    got = Counter((e["args"]["rule"], e["args"]["title"], e["name"], e["ph"], _ns(e["ts"]),
                   _ns(e.get("dur", 0)), names[e["tid"]].split(" (")[0])
                  for e in mine if e.get("cat") == CATEGORY and "evidence" in e["args"])
    want = Counter((f.rule, f.title, e.name, "X" if e.dur_us > 0 else "i", _ns(e.ts_us),
                    _ns(e.dur_us) if e.dur_us > 0 else 0, f"{f.severity.value} {f.rule}")
                   for f in analysis.findings for e in f.evidence)
    assert got == want
    assert set(by_track) <= set(names)  # every sub-track is named


# -- inputs `pista analyze` reads, read alike; interrupted writes ----------------------------------

def _foreign(text: str, how: str) -> bytes:
    """The real trace's JSON text made foreign the ways torch/Kineto versions and editors do."""
    mm = '"name": "aten::mm"'
    return {
        "utf-8 BOM": lambda: codecs.BOM_UTF8 + text.encode(),
        "UTF-16": lambda: text.encode("utf-16"),
        "bare N/A": lambda: text.replace('"Sequence number": 0,', '"Sequence number": N/A,', 1).encode(),
        # a lone one; and a pair and an escaped backslash before 'ud800', which stay as they are
        "lone surrogate": lambda: text.replace(mm, '"name": "aten::mm\\ud800"', 1).replace(
            '"name": "aten::add"', '"name": "aten::add\\ud83d\\ude00\\\\ud800"', 1).encode(),
        "latin-1 bytes": lambda: text.replace(mm, '"name": "aten::mm\xe9"', 1).encode("latin-1"),
    }[how]()


@pytest.mark.parametrize("how", ["utf-8 BOM", "UTF-16", "bare N/A", "lone surrogate", "latin-1 bytes"])
def test_annotate_reads_what_analyze_reads_and_writes_utf8(tmp_path, capsys, how):
    text = json.dumps(json.loads(gzip.decompress(fixture("seed_mm64_cold").read_bytes())), indent=1)
    src = tmp_path / "foreign.json"
    src.write_bytes(_foreign(text, how))
    assert src.read_bytes() != text.encode()  # the case did change the file
    assert main(["analyze", str(src), "--format", "json"]) == 0
    findings = len(json.loads(capsys.readouterr().out)["findings"])
    out = tmp_path / "out.json"
    assert main(["annotate", str(src), "-o", str(out)]) == 0
    err = capsys.readouterr().err
    assert f"wrote {out}: {findings} findings as markers" in err and "error" not in err
    events = json.loads(out.read_bytes().decode("utf-8"))["traceEvents"]  # strict UTF-8, then JSON
    original = json.loads(text)["traceEvents"]
    assert len([e for e in events if e.get("cat") != CATEGORY and e.get("pid") != annotated.FIRST_PID]) \
        == len(original)
    assert sum(e.get("cat") == CATEGORY and "message" in e["args"] for e in events) == findings
    if how in ("lone surrogate", "latin-1 bytes"):
        assert any(e.get("name") == "aten::mm\ufffd" for e in events)
    if how == "lone surrogate":
        assert any(e.get("name") == "aten::add\U0001f600\\ud800" for e in events)


PAD_MB = 64  # a top-level key this big makes the write take a while (~0.3 s here) to be caught in


@pytest.mark.parametrize("sig, code, line", [(signal.SIGTERM, 143, "pista: terminated"),
                                             (signal.SIGINT, 130, "pista: interrupted")])
def test_a_signal_mid_write_leaves_no_temp_file(tmp_path, sig, code, line):
    doc = gzip.decompress(fixture("seed_mm64_cold").read_bytes()).decode()
    src = tmp_path / "big.json"
    with open(src, "w") as f:  # the events of a real trace after a big key annotate re-emits as is
        f.write('{"padding": "' + "x" * (PAD_MB << 20) + '", ' + doc.lstrip()[1:])
    out = tmp_path / "out"
    out.mkdir()
    proc = subprocess.Popen([sys.executable, "-m", "pista", "annotate", str(src), "-o", str(out / "a.json")],
                            stderr=subprocess.PIPE)
    caught = False
    while proc.poll() is None and not caught:
        caught = any(name.endswith(".tmp") for name in os.listdir(out))
        if caught:
            proc.send_signal(sig)
        time.sleep(0.001)
    _, err = proc.communicate(timeout=120)
    assert caught, "the write ended before the test saw its temp file"
    assert proc.returncode == code and err.decode().splitlines()[-1] == line
    assert os.listdir(out) == []  # neither a temp file nor a partial output
