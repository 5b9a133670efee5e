"""A big trace damaged inside its event list is read streamed, like a clean one (issue 38 item 7): a bad
value mid-file, junk after the end, a cut at 90%. The peak memory of each read, in a process of its own,
stays near the clean copy's (read whole in memory before: a 560 MB copy took 2.0-2.7 GiB, the clean one
210 MiB), and the events kept are the clean file's less the damaged ones, found here by the standard
library's JSON decoder walking the clean file event by event, not by pista."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import numpy as np
import pytest
from conftest import big_copy

from pista.trace import load, stream
from pista.trace.load import load_trace

SOURCE = "series_mlp_eager"
# Past the streamed reader's threshold (16 MB) and its two-process split (24 MB), and big enough that
# a read whole in memory (~4x the JSON) stands well clear of Python's and numpy's own ~80 MB
TARGET_BYTES = 48 << 20
# A damaged copy's peak memory may pass the clean one's by this much (they were 2.5-3x apart)
PEAK_BOUND = 1.5
JUNK = b"garbage12345"

PEAK = """
import resource, sys
from pista.trace.load import load_trace
trace = load_trace(sys.argv[1])
own, forked = (resource.getrusage(who).ru_maxrss for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
print(type(trace.raw_args).__name__, len(trace), max(own, forked))
"""


def event_spans(data: bytes) -> list[tuple[int, int]]:
    """(first byte, byte after the last) of each event of the clean file, by json.JSONDecoder."""
    text = data.decode()
    assert len(text) == len(data), "the source trace is ASCII, so characters are bytes"
    decoder = json.JSONDecoder()
    pos = re.search(r'"traceEvents"\s*:\s*\[', text).end()
    spans = []
    while True:
        while text[pos] in " \t\r\n,":
            pos += 1
        if text[pos] == "]":
            return spans
        event, end = decoder.raw_decode(text, pos)
        spans.append((pos, end))
        pos = end


@pytest.fixture(scope="module")
def copies(tmp_path_factory):
    """The clean copy, its three damaged ones, and each one's events as json reads them."""
    folder = tmp_path_factory.mktemp("damaged")
    clean = folder / "clean.json"
    big_copy(SOURCE, clean, TARGET_BYTES)
    data = clean.read_bytes()
    events = json.loads(data)["traceEvents"]
    spans = event_spans(data)
    assert len(spans) == len(events)
    # one bad value mid-file: a digit of a duration becomes a letter (no JSON there)
    at = data.index(b'"dur":', len(data) // 2) + len(b'"dur":')
    while not data[at : at + 1].isdigit():
        at += 1
    bad = next(k for k, (start, end) in enumerate(spans) if start <= at < end)
    cut = int(len(data) * 0.9)
    complete = sum(1 for _, end in spans if end <= cut)
    damaged = {
        "bad value": (data[:at] + b"x" + data[at + 1 :], events[:bad] + events[bad + 1 :]),
        "junk at the end": (data + JUNK, events),
        "cut at 90%": (data[:cut], events[:complete]),
    }
    out = {"clean": (clean, events)}
    for name, (content, kept) in damaged.items():
        path = folder / (name.replace(" ", "_").replace("%", "") + ".json")
        path.write_bytes(content)
        out[name] = (path, kept)
    return out


def peak_rss(path) -> tuple[str, int, int]:
    """(the args reader's type, rows, peak RSS in KiB) of load_trace in a process of its own."""
    proc = subprocess.run([sys.executable, "-c", PEAK, str(path)], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "OPENBLAS_NUM_THREADS": "1"})
    assert proc.returncode == 0, proc.stderr
    reader, rows, peak = proc.stdout.split()
    return reader, int(rows), int(peak)


@pytest.fixture(scope="module")
def clean_peak(copies) -> int:
    reader, _, peak = peak_rss(copies["clean"][0])
    assert reader == "OffsetArgs"
    return peak


def test_the_copies_are_big_enough_to_stream(copies):
    for path, _ in copies.values():
        assert stream.unpacked_size(path) >= max(load.STREAM_MIN_BYTES, stream.PARALLEL_MIN_BYTES)


@pytest.mark.parametrize("damage", ["bad value", "junk at the end", "cut at 90%"])
def test_a_damaged_copy_takes_the_memory_of_a_clean_one(copies, clean_peak, damage):
    reader, _, peak = peak_rss(copies[damage][0])
    assert reader == "OffsetArgs"
    assert peak <= PEAK_BOUND * clean_peak, f"{damage}: {peak / 1024:.0f} MiB, clean {clean_peak / 1024:.0f} MiB"


@pytest.mark.parametrize("damage", ["bad value", "junk at the end", "cut at 90%"])
def test_the_events_kept_are_the_clean_ones_less_the_damaged(copies, damage):
    path, kept = copies[damage]
    trace = load_trace(path)
    assert isinstance(trace.raw_args, stream.OffsetArgs)
    assert trace.event_count == len(kept)
    rows = trace.file_rows()
    assert [trace.event_name(i) for i in range(len(trace))] == [kept[r].get("name", "") for r in rows.tolist()]
    ts_us = np.array([kept[r].get("ts", 0.0) for r in rows.tolist()], dtype=np.float64)
    assert np.array_equal(trace.ts, np.rint(ts_us * 1000.0).astype(np.int64))
    dur_us = np.array([kept[r].get("dur", 0.0) for r in rows.tolist()], dtype=np.float64)
    assert np.array_equal(trace.dur, np.rint(dur_us * 1000.0).astype(np.int64))
    for i in (0, len(trace) // 2, len(trace) - 1):
        assert trace.args(i) == kept[int(rows[i])].get("args", {})
    said = {"bad value": f"skipped 1 malformed event(s) of {len(kept) + 1} (first: event ",
            "junk at the end": f"ignored {len(JUNK)} byte(s) of junk after the end of the trace",
            "cut at 90%": f"the file is cut off mid-write (not valid JSON at the end); salvaged {len(kept)} complete "
                          "event(s)"}[damage]
    assert len(trace.notices) == 1 and trace.notices[0].startswith(said), trace.notices
