"""One Holistic Trace Analysis run, as bench.py times it: load the trace, then the standard
breakdowns (temporal, idle time, GPU kernels) and the CUDA kernel launch stats.

    python bench/hta_job.py TRACE RESULT.json

Runs in HTA's own virtualenv (pandas and friends; never a pista dependency). An analysis that
raises is recorded as such in RESULT.json and the next one still runs.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time

ANALYSES = ("get_temporal_breakdown", "get_idle_time_breakdown", "get_gpu_kernel_breakdown",
            "get_cuda_kernel_launch_stats")


def main() -> int:
    trace, result_path = os.path.abspath(sys.argv[1]), sys.argv[2]
    started = time.perf_counter()
    # HTA reads every trace in a folder: give it a folder holding just this one
    folder = tempfile.mkdtemp(prefix="hta-")
    os.symlink(trace, os.path.join(folder, os.path.basename(trace)))
    from hta.trace_analysis import TraceAnalysis

    analyzer = TraceAnalysis(trace_dir=folder)
    steps = {"load_s": round(time.perf_counter() - started, 3)}
    outcome = {}
    for name in ANALYSES:
        begin = time.perf_counter()
        try:
            getattr(analyzer, name)(visualize=False)
            outcome[name] = "ok"
        except Exception as err:  # noqa: BLE001 - recorded, and the bench goes on
            outcome[name] = f"{type(err).__name__}: {err}"[:200]
        steps[name + "_s"] = round(time.perf_counter() - begin, 3)
    os.unlink(os.path.join(folder, os.path.basename(trace)))
    os.rmdir(folder)
    with open(result_path, "w") as handle:
        json.dump({"outcome": outcome, "steps": steps}, handle)
    return 0


if __name__ == "__main__":
    sys.exit(main())
