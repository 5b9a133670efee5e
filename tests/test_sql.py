"""`pista sql`: the trace's tables in DuckDB, checked against the trace itself and against the table
torch printed for the same profile."""

from __future__ import annotations

import csv
import io
import json
import re
import subprocess
import sys

import numpy as np
import pytest
from conftest import fixture
from torch_table import parse_table

pytest.importorskip("duckdb")

from pista.sql import SCHEMA, query  # noqa: E402

NAME = "series_mlp_eager"


def one(facts, sql):
    _, rows = query(facts, sql)
    assert len(rows) == 1
    return rows[0][0] if len(rows[0]) == 1 else rows[0]


def test_row_counts_follow_the_trace(load_facts):
    facts = load_facts(NAME)
    trace = facts.trace
    assert one(facts, "SELECT count(*) FROM events") == len(trace)
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
    columns, rows = query(facts, "SELECT idx, op, launcher, launch_ts_ns, queued_ns, ts_ns FROM kernels")
    assert rows
    for idx, op, launcher, launch_ts, queued, ts in rows:
        assert (op if op is not None else -1) == facts.owner[idx]
        assert (launcher if launcher is not None else -1) == facts.launcher[idx]
        assert queued == ts - launch_ts
        if launcher is not None:
            assert launch_ts == facts.trace.ts[launcher] and facts.trace.event_name(launcher).startswith("cu")


def test_events_view_keeps_the_columns(load_facts):
    facts = load_facts(NAME)
    trace = facts.trace
    _, rows = query(facts, "SELECT idx, name, cat, ts_ns, dur_ns, external_id FROM events ORDER BY idx")
    idx = np.array([r[0] for r in rows])
    assert np.array_equal(idx, np.arange(len(trace)))
    for i in (0, len(trace) // 3, len(trace) - 1):
        _, name, cat, ts, dur, ext = rows[i]
        assert (name, cat, ts, dur) == (trace.event_name(i), trace.event_category(i), trace.ts[i], trace.dur[i])
        assert (ext if ext is not None else -1) == trace.external_id[i]


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
