"""Time whole processes on the same trace files: `pista analyze`, `pista table`, Holistic Trace
Analysis (load + temporal / idle / kernel breakdowns + CUDA kernel launch stats) and a bare
`orjson.loads` of the file.

Runs are interleaved (each repetition runs every tool once, in a rotating order) so that a
noisy neighbour slows all tools alike; the table shows medians. Per run it records wall time,
CPU time (user + system) and peak RSS of the process (wait4), and the peak of the summed RSS
of the process and its children (sampled from /proc/PID/statm every 10 ms: pista reads big
files with two processes).

    python bench/bench.py /tmp/big.json --reps 5
    python bench/bench.py /tmp/big.json /tmp/big1g.json --tools pista-analyze,pista-table,orjson

HTA runs in its own virtualenv, made under bench/out/ on first use (`pip install
HolisticTraceAnalysis`), or the one `--hta-python` names. Results go to bench/out/*.json.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
OUT = HERE / "out"
HTA_VENV = OUT / "hta-venv"
TOOLS = ("pista-analyze", "pista-table", "hta", "orjson", "pista-annotate", "pista-report", "pista-diff",
         "pista-sql", "pista-analyze-no-replay")
# The verbs beyond analyze and table, with what each is given after the trace (outputs go to the
# scratch folder, so the bench leaves nothing behind). Not in the default run: --tools names them.
DEFAULT_TOOLS = ("pista-analyze", "pista-table", "hta", "orjson")
SQL_QUERY = "SELECT name, count(*), sum(dur_ns) FROM kernels GROUP BY 1 ORDER BY 3 DESC LIMIT 5"
# How often to sample the process tree's memory, in seconds.
SAMPLE_EVERY_S = 0.01
# PSS (each shared page split among the processes that map it: the true footprint of a forked
# tree) costs the kernel a page-table walk per read, so it is sampled less often.
PSS_EVERY_SAMPLES = 5
PAGE_KB = os.sysconf("SC_PAGE_SIZE") // 1024
ORJSON_JOB = ("import gzip, sys, orjson\n"
              "data = open(sys.argv[1], 'rb').read()\n"
              "data = gzip.decompress(data) if data[:2] == b'\\x1f\\x8b' else data\n"
              "orjson.loads(data)\n")


def pista_command() -> list[str]:
    found = shutil.which("pista", path=str(Path(sys.executable).parent)) or shutil.which("pista")
    return [found] if found else [sys.executable, "-m", "pista"]


def compile_bytecode() -> None:
    """pip writes bytecode when it installs a package, and HTA, numpy and orjson run from theirs.
    An editable checkout under PYTHONDONTWRITEBYTECODE=1 (set on some machines) would compile
    pista's ~50 modules from source in every run, ~40 ms no installed tool pays: write them first."""
    import compileall

    import pista

    compileall.compile_dir(str(Path(pista.__file__).parent), quiet=1)


def hta_python(explicit: str | None) -> str:
    if explicit:
        return explicit
    python = HTA_VENV / "bin" / "python"
    if not python.exists():
        print(f"bench: making HTA's virtualenv in {HTA_VENV} (pip install HolisticTraceAnalysis)", file=sys.stderr)
        subprocess.run([sys.executable, "-m", "venv", str(HTA_VENV)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", "HolisticTraceAnalysis"], check=True)
    return str(python)


def commands(tool: str, trace: str, hta: str | None, scratch: Path) -> list[str]:
    if tool == "pista-analyze":
        return [*pista_command(), "analyze", trace]
    if tool == "pista-table":
        return [*pista_command(), "table", trace]
    if tool == "pista-analyze-no-replay":  # the engine's replay left out: what it costs analyze
        return [*pista_command(), "analyze", trace, "--no-replay"]
    if tool == "orjson":
        return [sys.executable, "-c", ORJSON_JOB, trace]
    if tool == "pista-annotate":
        return [*pista_command(), "annotate", trace, "-o", str(scratch / "annotated.json.gz")]
    if tool == "pista-report":
        return [*pista_command(), "report", trace, "-o", str(scratch / "report.html")]
    if tool == "pista-diff":  # the trace against itself: both sides loaded, as two traces would be
        return [*pista_command(), "diff", trace, trace]
    if tool == "pista-sql":
        return [*pista_command(), "sql", trace, SQL_QUERY]
    if tool == "hta":
        assert hta
        return [hta, str(HERE / "hta_job.py"), trace, str(scratch / "hta-result.json")]
    raise ValueError(tool)


def _tree_kb(pid: int, process_kb: Callable[[int], int]) -> int:
    """process_kb summed over pid and its descendants (a process gone meanwhile counts 0)."""
    total = 0
    todo = [pid]
    while todo:
        p = todo.pop()
        try:
            total += process_kb(p)
            with open(f"/proc/{p}/task/{p}/children") as handle:
                todo.extend(int(c) for c in handle.read().split())
        except (OSError, ValueError, IndexError):
            continue
    return total


def _rss_kb(pid: int) -> int:
    """RSS in KiB (pages a forked child shares are counted in each process, so a tree's sum bounds
    the true footprint from above). /proc/PID/statm is cheap to read, unlike smaps."""
    with open(f"/proc/{pid}/statm") as handle:
        return int(handle.read().split()[1]) * PAGE_KB


def _pss_kb(pid: int) -> int:
    """PSS in KiB (/proc/PID/smaps_rollup): pages a forked child shares with its parent count
    once over the tree."""
    with open(f"/proc/{pid}/smaps_rollup") as handle:
        for line in handle:
            if line.startswith("Pss:"):
                return int(line.split()[1])
    return 0



def run_once(command: list[str], timeout_s: float) -> dict:
    """One whole process: wall and CPU seconds, peak RSS (wait4) and sampled peak tree PSS."""
    started = time.perf_counter()
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    peak_tree = peak_pss = 0
    stop = threading.Event()

    def sample() -> None:
        nonlocal peak_tree, peak_pss
        samples = 0
        while not stop.is_set():
            peak_tree = max(peak_tree, _tree_kb(proc.pid, _rss_kb))
            samples += 1
            if samples % PSS_EVERY_SAMPLES == 1:
                peak_pss = max(peak_pss, _tree_kb(proc.pid, _pss_kb))
            stop.wait(SAMPLE_EVERY_S)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    stderr_chunks: list[bytes] = []
    reader = threading.Thread(target=lambda: stderr_chunks.append(proc.stderr.read()), daemon=True)
    reader.start()
    deadline = started + timeout_s
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        if time.perf_counter() > deadline:
            proc.kill()
            pid, status, usage = os.wait4(proc.pid, 0)
            break
        time.sleep(0.002)
    wall = time.perf_counter() - started
    stop.set()
    sampler.join()
    reader.join(timeout=5)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return {
        "wall_s": round(wall, 4),
        "cpu_s": round(usage.ru_utime + usage.ru_stime, 4),
        "max_rss_mb": round(usage.ru_maxrss / 1024, 1),
        "tree_rss_mb": round(peak_tree / 1024, 1),
        "tree_pss_mb": round(peak_pss / 1024, 1),
        "exit": proc.returncode,
        "stderr_tail": b"".join(stderr_chunks).decode(errors="replace")[-300:] if proc.returncode else "",
    }


def machine() -> dict:
    model = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem_gb = 0.0
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                mem_gb = round(int(line.split()[1]) / 2**20, 1)
    except OSError:
        pass
    return {"nproc": os.cpu_count(), "cpu": model, "ram_gb": mem_gb, "python": platform.python_version(),
            "date": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")}


def json_size(trace: str) -> int:
    sys.path.insert(0, str(HERE.parent / "src"))
    from pista.trace.stream import unpacked_size

    return unpacked_size(trace)


def bench(traces: list[str], tools: list[str], reps: int, hta: str | None, timeout_s: float,
          hta_reps: int | None = None) -> dict:
    results: dict = {"machine": machine(), "reps": reps, "traces": {}}
    if hta_reps is not None:
        results["hta_reps"] = hta_reps
    with tempfile.TemporaryDirectory(prefix="pista-bench-") as tmp:
        scratch = Path(tmp)
        for trace in traces:
            size = json_size(trace)
            runs: dict[str, list[dict]] = {t: [] for t in tools}
            hta_outcome = None
            for rep in range(reps):
                order = tools[rep % len(tools):] + tools[: rep % len(tools)]
                for tool in order:
                    if tool == "hta" and hta_reps is not None and rep >= hta_reps:
                        continue
                    run = run_once(commands(tool, trace, hta, scratch), timeout_s)
                    runs[tool].append(run)
                    if tool == "hta" and (scratch / "hta-result.json").exists():
                        hta_outcome = json.loads((scratch / "hta-result.json").read_text())
                    print(f"  {Path(trace).name} rep {rep + 1}/{reps} {tool:14s} {run['wall_s']:8.2f}s "
                          f"{run['max_rss_mb']:8.1f} MB" + (f"  exit {run['exit']}" if run["exit"] else ""),
                          file=sys.stderr)
            summary = {}
            for tool, rs in runs.items():
                summary[tool] = {key: statistics.median(r[key] for r in rs)
                                 for key in ("wall_s", "cpu_s", "max_rss_mb", "tree_rss_mb", "tree_pss_mb")}
                summary[tool]["failed_runs"] = sum(1 for r in rs if r["exit"])
            results["traces"][trace] = {"json_mb": round(size / 2**20, 1), "json_bytes": size, "median": summary, "runs": runs,
                                        "hta": hta_outcome}
    return results


def ratio(a: float | None, b: float | None, digits: int = 1) -> str:
    return f"{a / b:.{digits}f}x" if a and b else "-"


def render(results: dict) -> str:
    m = results["machine"]
    hta_note = f" (HTA: {results['hta_reps']})" if "hta_reps" in results else ""
    lines = [f"machine: {m['nproc']} cores, {m['cpu']}, {m['ram_gb']} GiB RAM; Python {m['python']}; {m['date']}; "
             f"medians of {results['reps']} interleaved runs{hta_note}", ""]
    head = (f"{'trace':28s} {'JSON':>8s}  {'tool':14s} {'wall':>8s} {'cpu':>8s} {'RSS':>9s} {'tree RSS':>9s} "
            f"{'tree PSS':>9s} {'RSS/JSON':>8s} {'PSS/JSON':>8s}")
    lines += [head, "-" * len(head)]
    for trace, r in results["traces"].items():
        for tool, s in r["median"].items():
            lines.append(f"{Path(trace).name[:28]:28s} {r['json_mb']:6.1f}MB  {tool:14s} {s['wall_s']:7.2f}s "
                         f"{s['cpu_s']:7.2f}s {s['max_rss_mb']:7.1f}MB {s['tree_rss_mb']:7.1f}MB "
                         f"{s['tree_pss_mb']:7.1f}MB "
                         f"{s['max_rss_mb'] * 2**20 / max(r.get('json_bytes', 1), 1):7.2f}x "
                         f"{s['tree_pss_mb'] * 2**20 / max(r.get('json_bytes', 1), 1):7.2f}x"
                         + ("  (failed)" if s["failed_runs"] else ""))
        med = r["median"]
        wall = {t: s["wall_s"] for t, s in med.items()}
        parts = []
        for tool in ("pista-analyze", "pista-table"):
            if tool in wall:
                parts.append(f"{tool}: HTA/pista {ratio(wall.get('hta'), wall[tool])}, "
                             f"orjson/pista {ratio(wall.get('orjson'), wall[tool])}")
        lines.append("  speed-up (wall): " + "; ".join(parts))
        verbs = [t for t in med if t.startswith("pista-") and t not in ("pista-analyze", "pista-table")]
        if verbs and "pista-analyze" in med:
            base = med["pista-analyze"]
            lines.append("  memory against pista-analyze (peak RSS, tree PSS): " + "; ".join(
                f"{t}: {ratio(med[t]['max_rss_mb'], base['max_rss_mb'], 2)}, "
                f"{ratio(med[t]['tree_pss_mb'], base['tree_pss_mb'], 2)}" for t in verbs))
        if r.get("hta"):
            failed = {k: v for k, v in r["hta"]["outcome"].items() if v != "ok"}
            if failed:
                lines.append(f"  HTA analyses that raised: {failed}")
        lines.append("")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("traces", nargs="+", help="trace files (.json; .json.gz works too)")
    parser.add_argument("--reps", type=int, default=5, help="repetitions per tool (default 5)")
    parser.add_argument("--tools", default=",".join(DEFAULT_TOOLS),
                        help=f"comma-separated subset of {','.join(TOOLS)} (default {','.join(DEFAULT_TOOLS)})")
    parser.add_argument("--hta-reps", type=int, help="fewer repetitions for HTA (it takes minutes on big files)")
    parser.add_argument("--hta-python", help="python of a virtualenv with HolisticTraceAnalysis installed")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds before a run is killed")
    parser.add_argument("--out", type=Path, help="JSON results (default bench/out/bench-DATE.json)")
    args = parser.parse_args(argv)
    tools = [t.strip() for t in args.tools.split(",") if t.strip()]
    unknown = set(tools) - set(TOOLS)
    if unknown:
        parser.error(f"unknown tools: {', '.join(sorted(unknown))}")
    hta = hta_python(args.hta_python) if "hta" in tools else None
    if any(t.startswith("pista") for t in tools):
        compile_bytecode()
    results = bench(args.traces, tools, args.reps, hta, args.timeout, args.hta_reps)
    text = render(results)
    print(text)
    OUT.mkdir(parents=True, exist_ok=True)
    out = args.out or OUT / f"bench-{dt.datetime.now(dt.timezone.utc).strftime('%Y%m%d-%H%M%S')}.json"
    results["table"] = text
    out.write_text(json.dumps(results, indent=1))
    print(f"results: {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
