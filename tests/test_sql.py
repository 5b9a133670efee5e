"""`pista sql`: the trace's tables in DuckDB, checked against the trace itself and against the table
torch printed for the same profile."""

from __future__ import annotations

import csv
import gzip
import io
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from conftest import fixture
from torch_table import parse_table

pytest.importorskip("duckdb")

from pista.errors import UsageError  # noqa: E402
from pista.sql import SCHEMA, query  # noqa: E402

NAME = "series_mlp_eager"


def one(facts, sql):
    _, rows = query(facts, sql)
    assert len(rows) == 1
    return rows[0][0] if len(rows[0]) == 1 else rows[0]


def test_row_counts_follow_the_trace(load_facts):
    facts = load_facts(NAME)
    trace = facts.trace
    assert one(facts, "SELECT count(*) FROM events") == trace.event_count
    assert one(facts, "SELECT count(*) FROM events WHERE ph IN ('s', 'f')") == trace.flow_count > 0
    assert one(facts, "SELECT count(*) FROM kernels") == int(facts.is_device_work.sum())
    assert one(facts, "SELECT count(*) FROM ops") == int(facts.is_host.sum())
    step_events = sum(1 for i in range(len(trace)) if re.fullmatch(r"ProfilerStep#\d+", trace.event_name(i)))
    assert one(facts, "SELECT count(*) FROM steps") == step_events > 0


def test_device_time_matches_torch(load_facts):
    facts = load_facts(NAME)
    torch = parse_table(fixture(NAME).with_name(NAME + ".table.txt"))
    device_us = one(facts, "SELECT sum(dur_ns) / 1e3 FROM kernels")
    assert device_us == pytest.approx(torch.self_device_total_us, rel=0.01)
    top = one(facts, "SELECT name FROM key_averages ORDER BY device_total_us DESC, name LIMIT 1")
    assert top[:52] == torch.rows[0].name[:52]


def test_kernels_link_to_their_ops_and_launches(load_facts):
    facts = load_facts(NAME)
    columns, rows = query(facts, "SELECT idx, op, op_name, launcher, launch_ts_ns, queued_ns, ts_ns FROM kernels")
    assert rows
    at = {row: i for i, row in enumerate(facts.trace.file_rows().tolist())}  # idx is the file's row
    for idx, op, op_name, launcher, launch_ts, queued, ts in rows:
        assert (at[op] if op is not None else -1) == facts.owner[at[idx]]
        assert op_name == (facts.trace.event_name(at[op]) if op is not None else None)
        assert (at[launcher] if launcher is not None else -1) == facts.launcher[at[idx]]
        assert queued == ts - launch_ts
        if launcher is not None:
            launch = at[launcher]
            assert launch_ts == facts.trace.ts[launch] and facts.trace.event_name(launch).startswith("cu")
        else:
            assert launch_ts == ts  # unlinked: its own start


def test_events_view_keeps_the_columns(load_facts):
    facts = load_facts(NAME)
    trace = facts.trace
    _, rows = query(facts, "SELECT idx, name, cat, ts_ns, dur_ns, external_id FROM events ORDER BY idx")
    idx = np.array([r[0] for r in rows])
    assert np.array_equal(idx, np.arange(trace.event_count))
    file_rows = trace.file_rows()
    for i in (0, len(trace) // 3, len(trace) - 1):
        _, name, cat, ts, dur, ext = rows[file_rows[i]]
        assert (name, cat, ts, dur) == (trace.event_name(i), trace.event_category(i), trace.ts[i], trace.dur[i])
        assert (ext if ext is not None else -1) == trace.external_id[i]
    flows = trace.flows  # the flow events, kept beside the columns, are rows of events too
    for k in (0, flows["row"].size - 1):
        _, name, cat, ts, dur, ext = rows[flows["row"][k]]
        assert (name, cat, ts, ext) == (trace.names[flows["name"][k]], trace.categories[flows["cat"][k]],
                                        flows["ts"][k], None)


def test_findings_are_analyze_s(load_facts, analysis_of):
    facts = load_facts(NAME)
    _, rows = query(facts, "SELECT rule FROM findings ORDER BY finding")
    assert [r[0] for r in rows] == [f.rule for f in analysis_of(NAME).findings]


def pista(*args):
    return subprocess.run([sys.executable, "-m", "pista", "sql", *args], capture_output=True, text=True)


def test_cli_formats_and_errors():
    path = str(fixture(NAME))
    sql = "SELECT step, count(*) AS kernels FROM kernels WHERE step IS NOT NULL GROUP BY step ORDER BY step"
    as_csv = list(csv.reader(io.StringIO(pista(path, sql, "--format", "csv").stdout)))
    as_json = json.loads(pista(path, sql, "--format", "json").stdout)
    assert as_csv[0] == ["step", "kernels"]
    assert [[str(r["step"]), str(r["kernels"])] for r in as_json] == as_csv[1:]
    text = pista(path, sql).stdout
    assert text.splitlines()[0].split() == ["step", "kernels"] and f"({len(as_json)} rows)" in text
    bad = pista(path, "SELEC nothing")
    assert bad.returncode == 2 and bad.stderr.startswith("pista: error: SQL:") and bad.stderr.count("\n") == 1
    schema = pista(path, "--schema").stdout
    assert all(re.search(rf"^{table}:", schema, re.M) for table in SCHEMA)


# Queries that would reach outside the trace's tables: each must be refused, as a SQL error.
ESCAPES = (
    "COPY (SELECT 1 AS x) TO '{victim}' (FORMAT csv)",
    "COPY kernels TO '{dir}/out.csv'",
    "EXPORT DATABASE '{dir}/db'",
    "SELECT * FROM read_csv('{victim}')",
    "SELECT * FROM read_text('/etc/hostname')",
    "SELECT * FROM glob('{dir}/*')",
    "SELECT * FROM '{victim}'",
    "ATTACH '{dir}/x.db' AS x",
    "INSTALL httpfs",
    "LOAD httpfs",
    "SET enable_external_access = true",
    "SET lock_configuration = false",
    "RESET lock_configuration",
    "SELECT 1; COPY (SELECT 1) TO '{dir}/second.csv'",
)


def test_sql_reaches_no_files(tmp_path, load_facts):
    victim = tmp_path / "victim.json.gz"
    victim.write_bytes(fixture("seed_mm64_warm").read_bytes())
    before = victim.read_bytes()
    # the one the audit found: COPY onto the input, through the CLI, from the input's folder
    copy = subprocess.run([sys.executable, "-m", "pista", "sql", victim.name,
                           f"COPY (SELECT 1 AS x) TO '{victim.name}' (FORMAT csv)"],
                          capture_output=True, text=True, cwd=tmp_path)
    assert copy.returncode == 2 and copy.stdout == ""
    assert copy.stderr.startswith("pista: error: SQL: Permission Error:") and copy.stderr.count("\n") == 1
    facts = load_facts("seed_mm64_warm")
    for sql in ESCAPES:
        with pytest.raises(UsageError, match=r"^SQL: ") as err:
            query(facts, sql.format(victim=victim, dir=tmp_path))
        assert "\n" not in str(err.value), sql
    assert victim.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["victim.json.gz"]
    # the lock leaves pista's own tables (numpy-backed) and views as queryable as before
    assert one(facts, "SELECT count(*) FROM events") == facts.trace.event_count
    assert one(facts, "SELECT count(*) FROM findings f JOIN evidence e USING (finding)") > 0


def _no_constants(name):
    raise ValueError(f"not JSON: {name}")


def test_json_is_strict_json(load_facts):
    path = str(fixture("seed_mm64_warm"))
    sql = ("SELECT step, list(dur_ns ORDER BY idx) AS durs, {'n': count(*), 'mean': avg(dur_ns)} AS stats, "
           "map(['first'], [min(name)]) AS names, 'nan'::DOUBLE AS nan, -'inf'::DOUBLE AS inf, "
           "[1.0, 'nan'::DOUBLE] AS mixed, DATE '2024-05-01' AS day, TIMESTAMP '2024-05-01 12:30:00' AS at, "
           "1.25::DECIMAL(6, 2) AS dec, 99999999999999999999::HUGEINT AS huge "
           "FROM kernels WHERE step IS NOT NULL GROUP BY step ORDER BY step")
    out = pista(path, sql, "--format", "json")
    assert out.returncode == 0, out.stderr
    rows = json.loads(out.stdout, parse_constant=_no_constants)
    _, expected = query(load_facts("seed_mm64_warm"), sql)
    assert len(rows) == len(expected) > 0
    for row, (step, durs, stats, names, *_) in zip(rows, expected, strict=True):
        assert row["step"] == step
        assert row["durs"] == durs and isinstance(row["durs"], list)
        assert row["stats"] == {"n": stats["n"], "mean": pytest.approx(stats["mean"])}
        assert row["names"] == {"first": names["first"]}
        assert row["nan"] is None and row["inf"] is None and row["mixed"] == [1.0, None]
        assert (row["day"], row["at"]) == ("2024-05-01", "2024-05-01T12:30:00")
        assert row["dec"] == 1.25 and row["huge"] == 99999999999999999999


HUGE = "ProfilerStep#99999999999999999999"


def test_step_number_past_bigint(tmp_path):
    from pista.trace.facts import derive
    from pista.trace.load import load_trace

    doc = json.loads(gzip.decompress(fixture("seed_mm64_warm").read_bytes()))
    steps = [e for e in doc["traceEvents"] if re.fullmatch(r"ProfilerStep#\d+", e.get("name", ""))]
    assert len(steps) > 1
    steps[0]["name"] = HUGE
    path = tmp_path / "hugestep.json"
    path.write_text(json.dumps(doc))
    cli = pista(str(path), "select 1")
    # the reader skips that event (no BIGINT holds its number), with a notice; sql runs on the rest
    assert cli.returncode == 0 and "numbered past int64" in cli.stderr and cli.stderr.count("\n") == 1
    facts = derive(load_trace(path))
    _, rows = query(facts, "SELECT e.name, s.step FROM steps s JOIN events e USING (idx) ORDER BY s.start_ns")
    assert rows == [(e["name"], int(e["name"].split("#")[1])) for e in steps[1:]]
    assert one(facts, f"SELECT count(*) FROM events WHERE name = '{HUGE}'") == 0
    assert one(facts, "SELECT DISTINCT typeof(step) FROM evidence") == "BIGINT"


def test_memory_events_have_byte_columns():
    import raw

    from pista.cli.common import open_trace
    from pista.sql import query

    name = "gpu/memory_leak"
    events = [e for e in raw.events(name) if e.get("name") == "[memory]"]
    cuda = [e["args"] for e in events if e["args"].get("Device Type") == 1]
    columns, rows = query(open_trace(str(fixture(name)), sql=True),
                          "SELECT count(*), sum(bytes), max(allocated_bytes), max(reserved_bytes) FROM memory "
                          "WHERE device = 'cuda:0'")
    assert rows[0] == (len(cuda), sum(a["Bytes"] for a in cuda), max(a["Total Allocated"] for a in cuda),
                       max(a["Total Reserved"] for a in cuda))
    # without profile_memory the table is there, empty
    assert query(open_trace(str(fixture("gpu/host_sync_item")), sql=True), "SELECT count(*) FROM memory")[1] == [(0,)]


# -- hostile queries and hostile names ----------------------------------------------------------

# Op names a spreadsheet would run as formulas, or that would break a CSV row or a terminal line.
HOSTILE_NAMES = ['=HYPERLINK("http://x.example","click")', "+1+1", "-2", "@SUM(A1)", "\tx", "\rx", "a\rb",
                 "line\nbreak", "\x1b]0;pwned\x07title", "\x9b2Jcsi", "\u202eevil", "plain"]
# How the names a terminal would act on read in CSV and in the table
SHOWN = {"\rx": "\\x0dx", "a\rb": "a\\x0db", "\x1b]0;pwned\x07title": "\\x1b]0;pwned\\x07title",
         "\x9b2Jcsi": "\\x9b2Jcsi", "\u202eevil": "\\u202eevil"}


def _hostile_trace(tmp_path, names=HOSTILE_NAMES):
    events = [{"ph": "X", "cat": "cpu_op", "name": name, "pid": 1, "tid": 1, "ts": 10.0 * i, "dur": 5.0}
              for i, name in enumerate(names)]
    path = tmp_path / "hostile.json"
    path.write_text(json.dumps({"traceEvents": events}))
    return str(path)


def _one_line_error(done) -> str:
    assert done.returncode == 2 and done.stdout == "", (done.returncode, done.stderr)
    assert done.stderr.startswith("pista: error: SQL: ") and done.stderr.count("\n") == 1, done.stderr
    return done.stderr


def test_csv_defuses_formulas_and_writes_controls_out(tmp_path):
    sql = "SELECT name, -5 AS n, dur_ns FROM ops ORDER BY idx"
    out = subprocess.run([sys.executable, "-m", "pista", "sql", _hostile_trace(tmp_path), sql, "--format", "csv"],
                         capture_output=True, check=True).stdout.decode()  # bytes: text mode would eat a \r
    # ESC, BEL, CR, C1 and bidi controls were written raw before; newline and tab are CSV data
    assert not re.search("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]", out)
    rows = list(csv.reader(io.StringIO(out, newline="")))
    assert rows[0] == ["name", "n", "dur_ns"]
    assert len(rows) == len(HOSTILE_NAMES) + 1  # no name split its row
    shown = [SHOWN.get(n, n) for n in HOSTILE_NAMES]
    defused = ["'" + n if n[0] in "=+-@\t" else n for n in shown]
    assert [r[0] for r in rows[1:]] == defused
    assert {(r[1], r[2]) for r in rows[1:]} == {("-5", "5000")}  # numbers stay numbers, -5 included
    assert out.endswith("\n") and "\r\n" not in out


def test_csv_defuses_formulas_where_a_spreadsheet_splits_again(tmp_path):
    # the guard looked at the cell's start only: `x;=1+1` split on ; (or a tab) starts a cell with =
    names = ["x;=1+1", "x\t=1+1", "x,@SUM(A1)", "x\n-2+3", "x;\t+1", "a;b", "a-b=c"]
    sql = "SELECT name FROM ops ORDER BY idx"
    out = subprocess.run([sys.executable, "-m", "pista", "sql", _hostile_trace(tmp_path, names), sql,
                          "--format", "csv"], capture_output=True, check=True).stdout.decode()
    cells = [row[0] for row in csv.reader(io.StringIO(out, newline=""))][1:]
    assert len(cells) == len(names)
    for cell in cells:  # however a spreadsheet splits the cell, no piece is a formula
        assert not any(piece.startswith(("=", "+", "-", "@")) for piece in re.split("[,;\t\n]", cell)), cell
    # and the text is the name's, a quote before each piece that was a formula
    assert [c.replace("'", "") for c in cells] == names


class _Discard(io.TextIOBase):
    """A stdout that keeps nothing: what a query writes costs no memory here."""

    def write(self, text: str) -> int:
        return len(text)


def _peak(argv: list[str]) -> int:
    """The most memory Python held while `pista` ran argv (the imports and caches are warm)."""
    import tracemalloc

    from pista.cli import main

    tracemalloc.start()
    try:
        assert main(argv) == 0
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("fmt", ["csv", "json", "table"])
def test_the_rows_stream_to_the_output(tmp_path, monkeypatch, fmt):
    # every row was collected in Python before the first was written: 586 MiB for SELECT * FROM events
    # on a 64 MB trace. Streamed, the rows add next to nothing to the peak of a count(*) of them.
    import tracemalloc

    from pista import sql
    from pista.cli.common import open_trace

    monkeypatch.setattr(sql, "CHUNK_ROWS", 500, raising=False)
    monkeypatch.setattr(sys, "stdout", _Discard())
    path = tmp_path / "ops.json"
    path.write_text(json.dumps({"traceEvents": [
        {"ph": "X", "cat": "cpu_op", "name": f"op{i % 7}", "pid": 1, "tid": 1, "ts": 10.0 * i, "dur": 5.0}
        for i in range(40_000)]}))
    _peak(["sql", str(path), "SELECT 1 FROM events LIMIT 1", "--format", fmt])  # imports, caches
    cost = (_peak(["sql", str(path), "SELECT * FROM events", "--format", fmt])
            - _peak(["sql", str(path), "SELECT count(*) FROM events", "--format", fmt]))
    # what holding every row takes, measured the same way
    facts = open_trace(str(path), sql=True, events_view=True)
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        rows = query(facts, "SELECT * FROM events")[1]
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert len(rows) == 40_000
    assert cost < held / 50, (cost, held)  # collected: 0.2 to 2.5 times what the rows hold


def test_table_output_shows_control_characters(tmp_path):
    out = pista(_hostile_trace(tmp_path), "SELECT name FROM ops ORDER BY idx").stdout
    lines = out.splitlines()
    assert len(lines) == len(HOSTILE_NAMES) + 3  # header, rule, rows, count: one line each
    assert not re.search("[\x00-\x09\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]", out)
    assert all(shown in out for shown in SHOWN.values()) and "line\\nbreak" in out and "\\tx" in out


def test_a_runaway_query_stops_at_the_timeout(tmp_path):
    start = time.monotonic()
    err = _one_line_error(pista(_hostile_trace(tmp_path), "SELECT count(*) FROM range(1e15::BIGINT)",
                                "--timeout", "1"))
    assert "ran past 1 s" in err and time.monotonic() - start < 30
    assert "--timeout" in pista(_hostile_trace(tmp_path), "SELECT 1", "--timeout", "-1").stderr


@pytest.mark.parametrize("sig, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_stops_a_running_query(tmp_path, sig, code):
    # before: DuckDB held the main thread, so Ctrl-C waited for a query that never ends
    proc = subprocess.Popen([sys.executable, "-m", "pista", "sql", _hostile_trace(tmp_path),
                             "SELECT count(*) FROM range(1e15::BIGINT)", "--timeout", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        _wait_for_cpu(proc.pid, seconds=3.0)  # past the start-up (~0.5 s): the query is running
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=20)
    finally:
        proc.kill()
        proc.wait()
    assert (proc.returncode, out, err.decode().count("\n")) == (code, b"", 1)


def _wait_for_cpu(pid: int, seconds: float) -> None:
    """Until the process has used `seconds` of CPU (Linux /proc; elsewhere a fixed wait)."""
    ticks = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            time.sleep(5)
            return
        if (int(fields[11]) + int(fields[12])) / ticks >= seconds:
            return
        time.sleep(0.05)


def test_a_query_writes_nothing_under_the_current_folder(tmp_path):
    # DuckDB's default temp directory, .tmp here, stayed writable under enable_external_access=false
    trace = _hostile_trace(tmp_path)
    (tmp_path / ".tmp").mkdir()
    for sql in ("COPY (SELECT 'x') TO '.tmp/out.csv'", "COPY (SELECT 'x') TO '.tmp/out.parquet' (FORMAT parquet)"):
        done = subprocess.run([sys.executable, "-m", "pista", "sql", trace, sql], capture_output=True, text=True,
                              cwd=tmp_path)
        assert "Permission Error" in _one_line_error(done)
    assert list((tmp_path / ".tmp").iterdir()) == []
    settings = pista(trace, "SELECT current_setting('temp_directory') AS t, current_setting('memory_limit') AS m",
                     "--format", "json")
    row = json.loads(settings.stdout)[0]
    assert row["t"] == ""  # no spilling: nothing written anywhere
    from pista.sql import memory_limit

    assert _bytes(row["m"]) == pytest.approx(_bytes(memory_limit()), rel=0.01)  # DuckDB prints 1 decimal


def _bytes(text: str) -> float:
    number, unit = re.fullmatch(r"([\d.]+) ?([KMGT]i?B)", text).groups()
    return float(number) * {"K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}[unit[0]]


@pytest.mark.parametrize("sql", ["SELECT INTERVAL '2147483647 months'", "SELECT to_days(2147483647)"])
def test_values_python_cannot_hold_are_one_line(tmp_path, sql):
    # before: OverflowError from the result's conversion, exit 3 (an 'internal error')
    assert "does not fit Python's types" in _one_line_error(pista(_hostile_trace(tmp_path), sql))


def test_column_types_are_the_schemas_whatever_width_the_trace_keeps(load_facts):
    """The trace keeps ids and event indices as int32 where they fit; the tables still have the
    types SCHEMA documents."""
    facts = load_facts(NAME)
    assert facts.trace.correlation.dtype == np.int32 and facts.parent.dtype == np.int32
    checked = 0
    for table, (_, columns) in SCHEMA.items():
        if not one(facts, f"SELECT count(*) FROM {table}"):
            continue
        for column, sql_type, _ in columns:
            if sql_type in ("BIGINT", "INTEGER"):
                assert one(facts, f"SELECT typeof({column}) FROM {table} LIMIT 1") == sql_type, (table, column)
                checked += 1
    assert checked > 20


def test_a_one_time_finding_says_so(load_facts, analysis_of):
    name = "gpu/profiler_first_step"
    rows = dict(query(load_facts(name), "SELECT rule, impact_once FROM findings")[1])
    assert rows == {f.rule: f.impact.once for f in analysis_of(name).findings}
    assert rows["profiler-overhead"] is True and rows["launch-bound"] is False
