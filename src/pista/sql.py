"""The trace's tables in DuckDB, for SQL: events, kernels, ops, steps, key_averages, findings.

The numpy columns of the Trace and its Facts are handed to DuckDB as they are (DuckDB scans
numpy buffers in place); names and categories stay interned and are joined in by views, so no
column is copied into a database. `findings` (and `evidence`) run the rule catalogue, so they are
only built when a query names them.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import queue
import re
import threading
import time
from collections.abc import Callable, Iterator
from operator import attrgetter
from typing import TYPE_CHECKING, Any

import numpy as np

from pista.errors import UsageError
from pista.trace.facts import Facts
from pista.trace.model import NARROW_COLUMNS, narrow

if TYPE_CHECKING:
    from pista.table import Table

# Table -> (what a row is, [(column, type, meaning)]). `pista sql TRACE --schema` prints this.
SCHEMA: dict[str, tuple[str, list[tuple[str, str, str]]]] = {
    "events": ("every event in the file (idx: its place there)", [
        ("idx", "BIGINT", "row number in the file's traceEvents (evidence and other tables point here)"),
        ("ph", "VARCHAR", "phase: X complete, i instant, s/f flow start/end, M metadata, C counter"),
        ("cat", "VARCHAR", "category: cpu_op, kernel, cuda_runtime, gpu_memcpy, user_annotation, ..."),
        ("name", "VARCHAR", "event name"),
        ("kind", "VARCHAR", "host | device | device_annotation | overhead | other"),
        ("pid", "BIGINT", "process (GPU lanes: the device); string pids get negative ids"),
        ("tid", "BIGINT", "thread (GPU lanes: the stream)"),
        ("ts_ns", "BIGINT", "start, ns (the trace's clock)"),
        ("dur_ns", "BIGINT", "duration, ns (0 for instants)"),
        ("end_ns", "BIGINT", "ts_ns + dur_ns"),
        ("external_id", "BIGINT", "args 'External id': links an op with the kernels it launched"),
        ("correlation", "BIGINT", "args 'correlation': links a runtime launch with its kernel"),
        ("stream", "BIGINT", "args 'stream'"),
        ("device", "BIGINT", "args 'device'"),
        ("flow_id", "BIGINT", "id of flow events"),
        ("parent", "BIGINT", "idx of the enclosing host event (NULL at the root)"),
        ("depth", "INTEGER", "depth in the host op tree (0 at the root)"),
        ("self_ns", "BIGINT", "host events: duration minus their children's"),
        ("step", "BIGINT", "ProfilerStep number the event belongs to (device work: the step that launched it)"),
    ]),
    "kernels": ("device work (kernels, memcpy, memset): a view of events", [
        ("idx", "BIGINT", "as in events"),
        ("cat", "VARCHAR", "kernel | gpu_memcpy | gpu_memset"),
        ("name", "VARCHAR", "kernel name"),
        ("device", "BIGINT", "GPU (the lane's pid)"),
        ("stream", "BIGINT", "CUDA stream (the lane's tid)"),
        ("ts_ns", "BIGINT", "start on the GPU, ns"),
        ("dur_ns", "BIGINT", "duration, ns"),
        ("end_ns", "BIGINT", "end, ns"),
        ("correlation", "BIGINT", "as in events"),
        ("external_id", "BIGINT", "as in events"),
        ("op", "BIGINT", "idx of the host op that owns it (same External id)"),
        ("op_name", "VARCHAR", "that op's name"),
        ("launcher", "BIGINT", "idx of the runtime call that launched it (same correlation)"),
        ("launch_ts_ns", "BIGINT", "when it was launched (its own ts when unlinked)"),
        ("queued_ns", "BIGINT", "ts_ns - launch_ts_ns: how long it waited to start"),
        ("step", "BIGINT", "as in events"),
    ]),
    "ops": ("host events (ops, record_function regions, runtime calls): a view of events", [
        ("idx", "BIGINT", "as in events"),
        ("cat", "VARCHAR", "cpu_op | user_annotation | cuda_runtime | cuda_driver | python_function | ..."),
        ("name", "VARCHAR", "op name"),
        ("pid", "BIGINT", "process"),
        ("tid", "BIGINT", "thread"),
        ("ts_ns", "BIGINT", "start, ns"),
        ("dur_ns", "BIGINT", "duration, ns"),
        ("self_ns", "BIGINT", "duration minus children's, ns"),
        ("parent", "BIGINT", "idx of the enclosing op"),
        ("depth", "INTEGER", "depth in the op tree"),
        ("external_id", "BIGINT", "as in events"),
        ("step", "BIGINT", "as in events"),
    ]),
    "steps": ("ProfilerStep#N regions", [
        ("step", "BIGINT", "N (NULL for an N past BIGINT: the region stays, without a number)"),
        ("idx", "BIGINT", "idx of the ProfilerStep#N event"),
        ("start_ns", "BIGINT", "start, ns"),
        ("end_ns", "BIGINT", "end, ns"),
        ("dur_ns", "BIGINT", "duration, ns"),
    ]),
    "memory": ("profile_memory=True traces: each [memory] event (an allocation or a free), in time order", [
        ("idx", "BIGINT", "as in events"),
        ("ts_ns", "BIGINT", "when, ns"),
        ("device", "VARCHAR", "cuda:N or cpu"),
        ("bytes", "BIGINT", "allocated (+) or freed (-) by this event"),
        ("allocated_bytes", "BIGINT", "the device's bytes allocated after it ('Total Allocated')"),
        ("reserved_bytes", "BIGINT", "the device's bytes reserved after it ('Total Reserved'; -1: not recorded)"),
        ("step", "BIGINT", "the ProfilerStep whose span holds it"),
    ]),
    "key_averages": ("the rebuilt key_averages() table (pista table): one row per name and device type", [
        ("name", "VARCHAR", "op or kernel name (ProfilerStep#N folded into ProfilerStep*)"),
        ("device_type", "VARCHAR", "CPU | CUDA"),
        ("calls", "BIGINT", "# of Calls"),
        ("self_cpu_us", "DOUBLE", "Self CPU, µs"),
        ("cpu_total_us", "DOUBLE", "CPU total, µs"),
        ("self_device_us", "DOUBLE", "Self CUDA, µs"),
        ("device_total_us", "DOUBLE", "CUDA total, µs"),
    ]),
    "findings": ("what pista analyze finds (runs the rule catalogue)", [
        ("finding", "BIGINT", "number, in the report's order (severity, then what fixing saves)"),
        ("rule", "VARCHAR", "rule id (pista explain RULE)"),
        ("severity", "VARCHAR", "severity"),
        ("title", "VARCHAR", "the rule's title"),
        ("message", "VARCHAR", "what was found, with numbers"),
        ("advice", "VARCHAR", "what to do"),
        ("impact_us", "DOUBLE", "what fixing it saves, µs per step (impact_once: in the whole window)"),
        ("impact_share", "DOUBLE", "that over the median step (impact_once: over the window), 0..1"),
        ("impact_once", "BOOLEAN", "a one-time cost (set-up, a first compile, the profiler's buffers)"),
    ]),
    "evidence": ("the events and spans each finding points at", [
        ("finding", "BIGINT", "findings.finding"),
        ("name", "VARCHAR", "event name (or what the span is)"),
        ("lane", "VARCHAR", "thread or GPU stream"),
        ("step", "BIGINT", "step number"),
        ("ts_us", "DOUBLE", "start, µs as in the trace file"),
        ("dur_us", "DOUBLE", "duration, µs"),
        ("note", "VARCHAR", "why this event"),
    ]),
}

_KINDS = ("other", "host", "device", "device_annotation", "overhead")
KIND = {name: code for code, name in enumerate(_KINDS)}
_INT64_MAX = int(np.iinfo(np.int64).max)


def _step_number(number: int | None) -> int:
    """A step number as BIGINT, -1 (NULL in the views) for none. `ProfilerStep#N` takes any digits,
    and N past int64 cannot be a BIGINT: such a step stays a region, only without a number."""
    return number if number is not None and 0 <= number <= _INT64_MAX else -1


def schema_text() -> str:
    lines = []
    for table, (what, columns) in SCHEMA.items():
        lines.append(f"{table}: {what}")
        lines.extend(f"  {col:<15} {typ:<8} {doc}" for col, typ, doc in columns)
        lines.append("")
    lines.append("Times are ns (ts_ns, dur_ns) except where a column says µs; missing ids are NULL.")
    return "\n".join(lines)


def _duckdb() -> Any:
    try:
        # duckdb: the sql extra, only when a query runs
        import duckdb
    except ImportError:
        raise UsageError("pista sql needs DuckDB: pip install 'pista[sql]'") from None
    return duckdb


# Every event, the flow events too, with every id the trace records.
_EVENTS_VIEW = """
    CREATE VIEW events AS
    SELECT e.idx, p.ph, c.cat, n.name, k.kind, e.pid, e.tid, e.ts_ns, e.dur_ns, e.ts_ns + e.dur_ns AS end_ns,
           NULLIF(e.external_id, -1) AS external_id, NULLIF(e.correlation, -1) AS correlation,
           NULLIF(e.stream, -1) AS stream, NULLIF(e.device, -1) AS device, NULLIF(e.flow_id, -1) AS flow_id,
           NULLIF(e.parent, -1) AS parent, e.depth, e.self_ns, NULLIF(e.step, -1) AS step
    FROM (SELECT * FROM _events UNION ALL SELECT * FROM _flow_events) e
         JOIN _names n USING (name_id) JOIN _cats c USING (cat_id)
         JOIN _kinds k USING (kind_id) JOIN _phases p USING (ph_code)
"""


# `kernels` (device work with its op and launch) and `ops` (host ops), over the trace's own rows.
_KERNELS_AND_OPS_VIEWS = """
        CREATE VIEW kernels AS
        SELECT e.idx::BIGINT AS idx, c.cat, n.name, e.pid::BIGINT AS device, e.tid::BIGINT AS stream, e.ts_ns,
               e.dur_ns, e.ts_ns + e.dur_ns AS end_ns, NULLIF(e.correlation, -1)::BIGINT AS correlation,
               NULLIF(e.external_id, -1)::BIGINT AS external_id, NULLIF(e.op, -1)::BIGINT AS op,
               opn.name AS op_name, NULLIF(e.launcher, -1)::BIGINT AS launcher, e.launch_ts_ns,
               e.ts_ns - e.launch_ts_ns AS queued_ns, NULLIF(e.step, -1)::BIGINT AS step
        FROM _kernel_rows e JOIN _names n USING (name_id) JOIN _cats c USING (cat_id)
             LEFT JOIN _names opn ON opn.name_id = e.op_name_id;
        CREATE VIEW ops AS
        SELECT e.idx, c.cat, n.name, e.pid, e.tid, e.ts_ns, e.dur_ns, e.self_ns, NULLIF(e.parent, -1) AS parent,
               e.depth, NULLIF(e.external_id, -1) AS external_id, NULLIF(e.step, -1) AS step
        FROM _events e JOIN _names n USING (name_id) JOIN _cats c USING (cat_id)
        WHERE e.kind_id = 1;
"""


def connect(facts: Facts, with_findings: bool = False, with_flows: bool = True) -> Any:
    """A DuckDB connection with the trace's tables registered (numpy columns, not copied), locked
    so that it reaches nothing else (see _LOCKDOWN). Without `with_flows` there is no `events`: the
    one table that shows the flow events (their columns copied for DuckDB, kept apart in the trace,
    see Trace.flows) and the args stream and device ids, which the command line keeps only for a
    query that names it (open_trace)."""
    duckdb = _duckdb()
    trace = facts.trace
    # no temp directory: nothing spills to disk, so nothing is written anywhere (DuckDB's default,
    # `.tmp` under the current folder, is also a folder the locked connection may still write to)
    con = duckdb.connect(config={"temp_directory": "", "memory_limit": memory_limit()})
    kind = _event_kinds(facts)
    # int32 where every number fits (and so each event's step): BIGINT in the views
    step_numbers = narrow(np.array([_step_number(s.number) for s in facts.steps] + [-1], dtype=np.int64))
    rows = _file_rows(trace)
    step = step_numbers[facts.event_step]
    columns = {
        "idx": rows,
        "ph_code": trace.ph, "cat_id": trace.cat, "name_id": trace.name, "kind_id": kind,
        "pid": trace.pid, "tid": trace.tid, "ts_ns": trace.ts, "dur_ns": trace.dur,
        "external_id": trace.external_id, "correlation": trace.correlation, "parent": _to_file(facts.parent, rows),
        "depth": facts.depth, "self_ns": facts.self_time, "step": step,
    }
    if with_flows:  # what only `events` shows
        columns |= {"stream": trace.stream, "device": trace.device, "flow_id": np.ascontiguousarray(trace.flow_id)}
        con.register("_flow_rows", _flow_columns(trace, columns))
    con.register("_rows", columns)
    con.register("_kernel_rows", _kernel_columns(facts, np.flatnonzero(kind == KIND["device"]), rows, step))
    _register_lookups(con, trace)
    _create_views(con, columns, with_flows)
    _register_steps(con, facts)
    _register_memory(con, facts)
    # start-up: `pista sql --schema` builds no table
    from pista.table import build_table

    table = build_table(facts)
    _register_key_averages(con, table)
    if with_findings:
        _register_findings(con, facts, table)
    _lock(con)
    return con


def _event_kinds(facts: Facts) -> np.ndarray:
    """Each event's kind id (_KINDS): host, device work, a GPU-side region, profiler overhead, else 0."""
    kind = np.zeros(len(facts.trace), dtype=np.int8)
    kind[facts.is_host] = KIND["host"]
    kind[facts.is_device_work] = KIND["device"]
    kind[facts.is_device_annotation] = KIND["device_annotation"]
    kind[facts.is_overhead] = KIND["overhead"]
    return kind


def _register_lookups(con: Any, trace: Any) -> None:
    """The tables the views join ids through: names, categories, kinds, phases."""
    con.register("_names", {"name_id": np.arange(len(trace.names), dtype=np.int32),
                            "name": np.asarray(trace.names, dtype=object)})
    con.register("_cats", {"cat_id": np.arange(len(trace.categories), dtype=np.int16),
                           "cat": np.asarray(trace.categories, dtype=object)})
    con.register("_kinds", {"kind_id": np.arange(len(_KINDS), dtype=np.int8),
                            "kind": np.asarray(_KINDS, dtype=object)})
    codes = np.unique(np.concatenate((trace.ph, trace.flows.get("ph", trace.ph[:0]))))
    con.register("_phases", {"ph_code": codes, "ph": np.asarray([chr(c) for c in codes.tolist()], dtype=object)})


def _create_views(con: Any, columns: dict[str, np.ndarray], with_flows: bool) -> None:
    """`kernels`, `ops`, and with the flows `events`, over the registered rows."""
    # the trace keeps ids and indices as int32 where they fit; the tables say BIGINT whatever the trace
    wide = ", ".join([f"{c}::BIGINT AS {c}" for c in ("idx", *NARROW_COLUMNS, "parent", "self_ns", "step")
                      if c in columns] + ["depth::INTEGER AS depth"])
    # kernels and ops read the trace's rows alone; events adds the flow events (never a kernel or op)
    con.execute(f"CREATE VIEW _events AS SELECT * REPLACE ({wide}) FROM _rows")
    if with_flows:
        con.execute(f"CREATE VIEW _flow_events AS SELECT * REPLACE ({wide}) FROM _flow_rows")
        con.execute(_EVENTS_VIEW)
    con.execute(_KERNELS_AND_OPS_VIEWS)


def _file_rows(trace: Any) -> np.ndarray:
    """Each event's row in the file (sql's idx): int32 where every row fits, and so parent, owner and
    launcher (BIGINT in the views)."""
    rows = trace.file_rows()
    if rows.size and rows[-1] <= np.iinfo(np.int32).max:
        rows = rows.astype(np.int32)
    return rows


def _attribute_columns(items: list[Any], columns: tuple[tuple[str, Callable[[Any], Any], Any], ...]
                       ) -> dict[str, np.ndarray]:
    """Per (name, getter, dtype) of `columns`, in that order: the getter's value of each item, as an array."""
    return {name: np.array([get(item) for item in items], dtype=dtype) for name, get, dtype in columns}


def _step_of(item: Any) -> int:
    return _step_number(item.step)


def _severity_text(finding: Any) -> str:
    return str(getattr(finding.severity, "value", finding.severity))


_STEP_TIMES = tuple((column, attrgetter(column.removesuffix("_ns")), np.int64)
                    for column in ("start_ns", "end_ns", "dur_ns"))
_KEY_AVERAGES = tuple((name, attrgetter(name), dtype) for name, dtype in (
    ("name", object), ("device_type", object), ("calls", np.int64), ("self_cpu_us", np.float64),
    ("cpu_total_us", np.float64), ("self_device_us", np.float64), ("device_total_us", np.float64)))
_FINDINGS = (
    ("rule", attrgetter("rule"), object), ("severity", _severity_text, object), ("title", attrgetter("title"), object),
    ("message", attrgetter("message"), object), ("advice", attrgetter("advice"), object),
    ("impact_us", attrgetter("impact.us"), np.float64), ("impact_share", attrgetter("impact.share"), np.float64),
    ("impact_once", attrgetter("impact.once"), bool))
_EVIDENCE = (
    ("name", attrgetter("name"), object), ("lane", attrgetter("lane"), object),
    # int64 with -1 for none, so the column is BIGINT whatever the numbers (an object column
    # of ints turns INTEGER or HUGEINT by its values)
    ("step", _step_of, np.int64),
    ("ts_us", attrgetter("ts_us"), np.float64), ("dur_us", attrgetter("dur_us"), np.float64),
    ("note", attrgetter("note"), object))


def _register_steps(con: Any, facts: Facts) -> None:
    con.register("_steps", {
        "step": np.array([_step_number(s.number) for s in facts.steps], dtype=np.int64),
        "idx": facts.trace.file_rows([s.index for s in facts.steps]),
        **_attribute_columns(facts.steps, _STEP_TIMES),
    })
    con.execute("CREATE VIEW steps AS SELECT NULLIF(step, -1) AS step, idx, start_ns, end_ns, dur_ns FROM _steps")


def _register_key_averages(con: Any, table: Table) -> None:
    con.register("key_averages", _attribute_columns(table.rows, _KEY_AVERAGES))


def _kernel_columns(facts: Facts, k: np.ndarray, rows: np.ndarray, step: np.ndarray) -> dict[str, np.ndarray]:
    """The rows of `kernels` (the events k), their op's name and launch time looked up here: a join
    of every event with itself (twice) took DuckDB more memory than the whole trace."""
    trace = facts.trace
    owner, launcher = facts.owner[k], facts.launcher[k]
    return {
        "idx": rows[k], "cat_id": trace.cat[k], "name_id": trace.name[k], "pid": trace.pid[k], "tid": trace.tid[k],
        "ts_ns": trace.ts[k], "dur_ns": trace.dur[k], "correlation": trace.correlation[k],
        "external_id": trace.external_id[k], "op": _to_file(owner, rows),
        "op_name_id": np.where(owner >= 0, trace.name[owner], -1), "launcher": _to_file(launcher, rows),
        "launch_ts_ns": np.where(launcher >= 0, trace.ts[launcher], trace.ts[k]), "step": step[k],
    }


def _to_file(index: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Row numbers of the trace's columns (-1: none) as file rows (sql's idx)."""
    return np.where(index >= 0, rows[index], -1) if rows.size else index


def _flow_columns(trace: Any, columns: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The flow events' rows of `events`, in `columns`' order: their own columns, none of the op
    tree's facts (as for any event outside it)."""
    flows = trace.flows
    if not flows:
        return {name: column[:0] for name, column in columns.items()}
    n = trace.flow_count
    own = {"idx": flows["row"], "ph_code": flows["ph"], "cat_id": flows["cat"], "name_id": flows["name"],
           "pid": flows["pid"], "tid": flows["tid"], "ts_ns": flows["ts"], "dur_ns": flows["dur"],
           **{c: flows[c] for c in NARROW_COLUMNS[2:]}}
    outside = {"kind_id": 0, "depth": 0, "self_ns": 0}  # anything else: -1, no parent, step, owner...
    return {name: np.ascontiguousarray(own[name]) if name in own
            else np.full(n, outside.get(name, -1), dtype=columns[name].dtype) for name in columns}


def _register_memory(con: Any, facts: Facts) -> None:
    # start-up: `pista sql --schema` builds no memory view
    from pista.memory import memory_rows

    rows = memory_rows(facts)
    starts = np.array([s.start for s in facts.steps], dtype=np.int64)
    ends = np.array([s.end for s in facts.steps], dtype=np.int64)
    numbers = np.array([_step_number(s.number) for s in facts.steps] + [-1], dtype=np.int64)
    k = np.searchsorted(starts, rows["ts_ns"], side="right") - 1
    inside = (k >= 0) & (rows["ts_ns"] < ends[np.maximum(k, 0)]) if starts.size else np.zeros(k.size, dtype=bool)
    rows["idx"] = facts.trace.file_rows(rows["idx"])
    con.register("_memory", dict(rows, step=numbers[np.where(inside, k, -1)]))
    con.execute("CREATE VIEW memory AS SELECT idx, ts_ns, device, bytes, allocated_bytes, reserved_bytes, "
                "NULLIF(step, -1) AS step FROM _memory")


# The user's SQL runs on a connection that can reach nothing but the tables above: no files read
# or written (COPY ... TO could overwrite the trace itself), no ATTACH, no extensions installed or
# loaded, no Python variables scanned. Locked last, so no SET can turn any of it back on.
_LOCKDOWN = (
    "SET python_enable_replacements = false",
    "SET autoinstall_known_extensions = false",
    "SET autoload_known_extensions = false",
    "SET enable_external_access = false",
    "SET lock_configuration = true",
)


def _lock(con: Any) -> None:
    for statement in _LOCKDOWN:
        con.execute(statement)


def _register_findings(con: Any, facts: Facts, table: Table) -> None:
    # start-up: the analysis only for the findings view
    from pista.analysis import analyze

    findings = analyze(facts, table=table).findings
    con.register("findings", _finding_columns(findings))
    con.register("_evidence", _evidence_columns(findings))
    con.execute("CREATE VIEW evidence AS SELECT finding, name, lane, NULLIF(step, -1) AS step, ts_us, dur_us, note "
                "FROM _evidence")


def _finding_columns(findings: list[Any]) -> dict[str, np.ndarray]:
    return {"finding": np.arange(1, len(findings) + 1, dtype=np.int64), **_attribute_columns(findings, _FINDINGS)}


def _evidence_columns(findings: list[Any]) -> dict[str, np.ndarray]:
    numbers = [k for k, f in enumerate(findings, 1) for _ in f.evidence]
    return {"finding": np.array(numbers, dtype=np.int64),
            **_attribute_columns([e for f in findings for e in f.evidence], _EVIDENCE)}


_LOCKED_NOTE = "pista sql only queries the trace's tables: no files, extensions or settings"
_NEEDS_FINDINGS = re.compile(r"\b(findings|evidence)\b", re.IGNORECASE)
_NEEDS_FLOWS = re.compile(r"\bevents\b", re.IGNORECASE)
# How long one query may run (`pista sql --timeout` overrides): DuckDB scans a 64 MB trace's
# million events in milliseconds, so a query still running after a minute is a runaway
# (`FROM range(1e15)`, a cross join of events with itself), not a slow answer.
QUERY_TIMEOUT_S = 60.0
# DuckDB's working memory, as a share of the machine's RAM: DuckDB's own default is 80%, but the
# trace's columns (scanned in place, not counted by DuckDB) and this process live in the rest.
MEMORY_SHARE = 0.5
# How long a query told to stop may take to notice: DuckDB checks between chunks of rows.
STOP_GRACE_S = 5.0


def memory_limit() -> str:
    """DuckDB's memory_limit setting: MEMORY_SHARE of the RAM, or DuckDB's default if unknown."""
    try:
        ram = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):
        return "80%"
    return f"{max(1, int(ram * MEMORY_SHARE) >> 20)}MiB"


def shows_flows(sql: str) -> bool:
    """Whether the query may read the flow events (it names `events`): the command line keeps their
    columns only then (34 MiB of a 1 GB trace)."""
    return bool(_NEEDS_FLOWS.search(sql))


# Rows handed from DuckDB to the writer at a time: the outputs stream, so `SELECT * FROM events` on
# a 64 MB trace holds a few chunks of Python rows, not all of them (586 MiB before).
CHUNK_ROWS = 10_000
# How many chunks DuckDB may run ahead of the writer.
CHUNKS_AHEAD = 2


def query(facts: Facts, sql: str,
          timeout: float | None = QUERY_TIMEOUT_S) -> tuple[list[str], list[tuple[Any, ...]]]:
    """Run one SQL statement over the trace's tables: (column names, every row). For a result of any
    size, query_stream hands the rows over in chunks."""
    with query_stream(facts, sql, timeout) as (columns, chunks):
        return columns, [row for chunk in chunks for row in chunk]


@contextlib.contextmanager
def query_stream(facts: Facts, sql: str, timeout: float | None = QUERY_TIMEOUT_S
                 ) -> Iterator[tuple[list[str], Iterator[list[tuple[Any, ...]]]]]:
    """Run one SQL statement over the trace's tables: (column names, the rows in chunks of up to
    CHUNK_ROWS, as DuckDB makes them). `timeout` in seconds (None: no limit) counts the time spent
    waiting for DuckDB, not writing the rows out; a query past it, or interrupted, is stopped, and
    so is one whose reader leaves the `with` early."""
    duckdb = _duckdb()
    con = connect(facts, with_findings=bool(_NEEDS_FINDINGS.search(sql)), with_flows=shows_flows(sql))
    run = _Stoppable(con, sql, timeout, duckdb)
    try:
        yield run.next(), run.chunks()
    finally:
        run.stop()
        with contextlib.suppress(duckdb.Error):  # still busy: a query that ignored its stop
            con.close()


def _usage_error(err: BaseException, duckdb: Any) -> BaseException:
    """What the query raised, as the one line the command line prints."""
    if isinstance(err, duckdb.OutOfMemoryException):
        return UsageError(f"SQL: the query needs more than the {memory_limit()} of memory pista sql gives "
                          "DuckDB (aggregate more, or select fewer rows)")
    if isinstance(err, duckdb.Error):
        return UsageError(f"SQL: {_duckdb_message(err, duckdb)}")
    if isinstance(err, (OverflowError, ValueError)):  # a DuckDB value Python cannot hold (INTERVAL, DATE)
        return UsageError(f"SQL: a value in the result does not fit Python's types ({err}); "
                          "cast the column, e.g. ::VARCHAR")
    return err


def _duckdb_message(err: BaseException, duckdb: Any) -> str:
    """DuckDB's error on one line; where the lockdown refused it, with a note saying so."""
    message = " ".join(str(err).split())
    if isinstance(err, duckdb.PermissionException) or "configuration has been locked" in message:
        message += f" ({_LOCKED_NOTE})"
    return message


class _Failed:
    def __init__(self, err: BaseException) -> None:
        self.err = err


_END = object()


class _Stoppable:
    """The query in a thread of its own: DuckDB keeps the thread that runs it in C until the query
    (or the fetch of a chunk) ends, so the Ctrl-C (or SIGTERM) of a never-ending query would never be
    seen. That thread puts the columns, then the chunks of rows, on a short queue; this one takes
    them, and on an interrupt or past `timeout` tells DuckDB to stop. (It waits on a queue, not on
    Thread.join: a join that Ctrl-C interrupts can leave the thread looking finished, 3.11.)"""

    def __init__(self, con: Any, sql: str, timeout: float | None, duckdb: Any) -> None:
        self.con, self.timeout, self.left, self.duckdb = con, timeout, timeout, duckdb
        self.queue: queue.Queue[Any] = queue.Queue(maxsize=CHUNKS_AHEAD)
        self.stopping, self.done = threading.Event(), threading.Event()
        threading.Thread(target=self._work, args=(sql,), name="pista-sql", daemon=True).start()

    def _work(self, sql: str) -> None:
        try:
            relation = self.con.sql(sql)
            self._put([] if relation is None else list(relation.columns))
            # one run, held in DuckDB's memory (columns, compact) and read a chunk at a time: in the
            # query's order, which a streamed result (connection.execute) does not keep
            rows = iter(()) if relation is None else relation.iter_rows(CHUNK_ROWS)
            while not self.stopping.is_set() and (chunk := list(itertools.islice(rows, CHUNK_ROWS))):
                self._put(chunk)
            self._put(_END)
        except BaseException as err:  # noqa: BLE001 - raised again in the waiting thread
            self._put(_Failed(err))
        finally:
            self.done.set()

    def _put(self, item: Any) -> None:
        """Onto the queue, once the writer has room; nowhere once it has stopped the query."""
        while not self.stopping.is_set():
            with contextlib.suppress(queue.Full):
                self.queue.put(item, timeout=0.1)
                return

    def next(self) -> Any:
        """The worker's next item, waiting at most what is left of the timeout."""
        start = time.monotonic()
        try:
            item = self.queue.get(timeout=None if self.left is None else max(0.0, self.left))
        except queue.Empty:
            self.stop()
            raise UsageError(f"SQL: the query ran past {self.timeout:g} s and was stopped (--timeout SECONDS "
                             "gives it longer, --timeout 0 no limit)") from None
        except BaseException:  # Ctrl-C, SIGTERM: stop the query, then unwind as asked
            self.stop()
            raise
        if self.left is not None:
            self.left -= time.monotonic() - start
        if isinstance(item, _Failed):
            raise _usage_error(item.err, self.duckdb) from None
        return item

    def chunks(self) -> Iterator[list[tuple[Any, ...]]]:
        while (chunk := self.next()) is not _END:
            yield chunk

    def stop(self) -> None:
        self.stopping.set()
        if not self.done.is_set():
            self.con.interrupt()
            self.done.wait(STOP_GRACE_S)
