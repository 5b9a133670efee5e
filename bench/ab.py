"""Interleaved A/B of two pista source trees on one trace: `python -m pista VERB TRACE` with PYTHONPATH
set to each tree in turn (the order alternating each repetition, so a busy neighbour slows both alike),
and the medians of wall time, CPU time (user + system of the process and the children it waited for:
the forked reader's second process included) and peak RSS (wait4's ru_maxrss, the largest of them).

On a shared machine CPU time is the steadier figure: wall time follows the neighbours' load.

    git archive BASE src | tar -x -C /tmp/base
    python bench/ab.py /tmp/big1g.json --before /tmp/base/src --after src --reps 3
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time


def run_once(src: str, verb: str, trace: str) -> tuple[float, float, float]:
    """(wall s, CPU s, peak RSS MiB) of one run."""
    env = dict(os.environ, PYTHONPATH=os.path.abspath(src))
    start = time.perf_counter()
    child = subprocess.Popen([sys.executable, "-m", "pista", verb, trace], env=env, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) not in (0, 1):  # 1: findings at the failing severity
        raise SystemExit(f"{src}: pista {verb} exited with {os.waitstatus_to_exitcode(status)}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("trace")
    parser.add_argument("--before", required=True, help="the first tree's src folder")
    parser.add_argument("--after", required=True, help="the second tree's src folder")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--verb", default="analyze")
    args = parser.parse_args()
    trees = {"before": args.before, "after": args.after}
    runs: dict[str, list[tuple[float, float, float]]] = {name: [] for name in trees}
    for rep in range(args.reps):
        for name in (list(trees) if rep % 2 == 0 else list(trees)[::-1]):
            wall, cpu, rss = run_once(trees[name], args.verb, args.trace)
            runs[name].append((wall, cpu, rss))
            print(f"{name:6s} rep {rep + 1}: wall {wall:6.2f} s  CPU {cpu:6.2f} s  RSS {rss:5.0f} MiB  "
                  f"load {os.getloadavg()[0]:.1f}", flush=True)
    for name, rows in runs.items():
        wall, cpu, rss = (statistics.median(row[k] for row in rows) for k in range(3))
        print(f"{name:6s} median: wall {wall:6.2f} s  CPU {cpu:6.2f} s  RSS {rss:5.0f} MiB")


if __name__ == "__main__":
    main()
