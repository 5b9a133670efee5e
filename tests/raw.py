"""The trace file's events read plainly (gzip + json), for tests that compute a figure
independently of pista's reader, columns and facts."""

from __future__ import annotations

import gzip
import json
import statistics
from functools import cache
from pathlib import Path

FIXTURES = Path(__file__).parent / "fixtures"


@cache
def events(name: str) -> tuple[dict, ...]:
    path = FIXTURES / (name if name.endswith((".json", ".gz")) else name + ".json.gz")
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as f:
        data = json.load(f)
    listed = data["traceEvents"] if isinstance(data, dict) else data  # older traces: a bare list of events
    return tuple(e for e in listed if isinstance(e, dict))


def complete(name: str, cat: str | None = None, event_name: str | None = None) -> list[dict]:
    return [e for e in events(name) if e.get("ph") == "X" and (cat is None or e.get("cat") == cat)
            and (event_name is None or e.get("name") == event_name)]


def steps(name: str) -> list[dict]:
    """The ProfilerStep#N annotations on the host, in time order."""
    return sorted((e for e in complete(name, "user_annotation") if str(e.get("name", "")).startswith("ProfilerStep#")),
                  key=lambda e: e["ts"])


def window_us(name: str) -> float:
    """What a one-time cost's share is of: from the first step's start to the end of the last step or of
    the device work launched inside the steps, whichever ends later."""
    spans = steps(name)
    start, end = float(spans[0]["ts"]), max(float(s["ts"]) + float(s["dur"]) for s in spans)
    launched = [float(k["ts"]) + float(k["dur"]) for k in device_work(name) if start <= launched_at(name, k) < end]
    return max([end, *launched]) - start


def launched_at(name: str, work: dict) -> float:
    """When the runtime call that launched a piece of device work started (its correlation id), -1 for none."""
    return _launch_ts(name).get(work.get("args", {}).get("correlation"), -1.0)


@cache
def _launch_ts(name: str) -> dict:
    return {c["args"]["correlation"]: float(c["ts"]) for c in complete(name)
            if c.get("cat") in ("cuda_runtime", "cuda_driver") and "correlation" in c.get("args", {})}


def median_step_us(name: str) -> float:
    return statistics.median(float(e["dur"]) for e in steps(name))


def device_work(name: str) -> list[dict]:
    return [e for e in complete(name) if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]


def busy_intervals(name: str) -> list[tuple[float, float]]:
    """Merged [start, end) µs intervals with some device work running."""
    out: list[list[float]] = []
    for e in sorted(device_work(name), key=lambda e: e["ts"]):
        s, t = float(e["ts"]), float(e["ts"]) + float(e["dur"])
        if out and s <= out[-1][1]:
            out[-1][1] = max(out[-1][1], t)
        else:
            out.append([s, t])
    return [(a, b) for a, b in out]


def inside(outer: dict, inner: dict) -> bool:
    return (inner.get("tid") == outer.get("tid") and inner.get("pid") == outer.get("pid")
            and float(outer["ts"]) <= float(inner["ts"])
            and float(inner["ts"]) + float(inner["dur"]) <= float(outer["ts"]) + float(outer["dur"]))


def step_us(name: str) -> float:
    """What impact shares are of: per step, its host span or the busy time of the device work launched
    in it (the launch call's time inside the step), whichever is longer; the median of those."""
    spans = [(float(s["ts"]), float(s["ts"]) + float(s["dur"])) for s in steps(name)]
    launch_ts = {c["args"]["correlation"]: float(c["ts"]) for c in complete(name)
                 if c.get("cat") in ("cuda_runtime", "cuda_driver") and "correlation" in c.get("args", {})}
    lengths = []
    for a, b in spans:
        mine = [(float(k["ts"]), float(k["ts"]) + float(k["dur"])) for k in device_work(name)
                if a <= launch_ts.get(k.get("args", {}).get("correlation"), -1.0) < b]
        busy, end = 0.0, float("-inf")
        for s0, t0 in sorted(mine):
            if t0 > end:
                busy += t0 - max(s0, end)
                end = t0
        lengths.append(max(b - a, busy))
    return statistics.median(lengths)


# -- plain interval arithmetic over µs spans, independent of pista's facts ------------------------

def merge(ivs):
    out = []
    for a, b in sorted(ivs):
        if b <= a:
            continue
        if out and a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return [(a, b) for a, b in out]


def intersect(xs, ys):
    out, i, j = [], 0, 0
    while i < len(xs) and j < len(ys):
        a, b = max(xs[i][0], ys[j][0]), min(xs[i][1], ys[j][1])
        if b > a:
            out.append((a, b))
        if xs[i][1] < ys[j][1]:
            i += 1
        else:
            j += 1
    return out


def subtract(xs, ys):
    if not ys:
        return xs
    lo, hi = min(xs[0][0], ys[0][0]), max(xs[-1][1], ys[-1][1])
    gaps = merge([(lo, ys[0][0])] + [(ys[k][1], ys[k + 1][0]) for k in range(len(ys) - 1)] + [(ys[-1][1], hi)])
    return intersect(xs, gaps)


def total(ivs):
    return sum(b - a for a, b in ivs)


def idle_in_steps(name):
    """The gaps in the device's busy time inside the ProfilerStep spans."""
    busy = busy_intervals(name)
    out = []
    for s in steps(name):
        lo, hi = float(s["ts"]), float(s["ts"]) + float(s["dur"])
        cur = lo
        for a, b in busy:
            if b <= lo or a >= hi:
                continue
            if a > cur:
                out.append((cur, a))
            cur = max(cur, b)
        if cur < hi:
            out.append((cur, hi))
    return merge(out)


def self_us(name: str, event: dict) -> float:
    """An event's duration less its direct children's on its thread (torch's self time)."""
    kids = [e for e in complete(name) if e is not event and e.get("cat") != "python_function" and inside(event, e)]
    direct = [k for k in kids if not any(o is not k and inside(o, k) for o in kids)]
    return float(event["dur"]) - sum(float(k["dur"]) for k in direct)


def in_steps(name: str, events: list[dict]) -> list[dict]:
    """The events that start inside the ProfilerStep window."""
    s = steps(name)
    lo, hi = float(s[0]["ts"]), float(s[-1]["ts"]) + float(s[-1]["dur"])
    return [e for e in events if lo <= float(e["ts"]) < hi]


def without_steps(name: str, directory: Path) -> Path:
    """A copy of a fixture with its ProfilerStep#N annotations dropped (a trace profiled without a
    schedule's steps), written as plain JSON under directory."""
    path = FIXTURES / (name if name.endswith((".json", ".gz")) else name + ".json.gz")
    with gzip.open(path, "rt", encoding="utf-8") as f:
        data = json.load(f)
    data["traceEvents"] = [e for e in data["traceEvents"] if not str(e.get("name", "")).startswith("ProfilerStep#")]
    out = directory / (Path(name).name + ".no_steps.json")
    out.write_text(json.dumps(data))
    return out


def cut(name: str, directory: Path, drop, suffix: str) -> Path:
    """A copy of a fixture without the events `drop(event)` picks (regions, steps, CUPTI's load events: a
    window as another capture would record it), written as plain JSON under directory."""
    path = FIXTURES / (name if name.endswith((".json", ".gz")) else name + ".json.gz")
    with gzip.open(path, "rt", encoding="utf-8") as f:
        data = json.load(f)
    data["traceEvents"] = [e for e in data["traceEvents"] if not (isinstance(e, dict) and drop(e))]
    out = directory / f"{Path(name).name}.{suffix}.json"
    out.write_text(json.dumps(data))
    return out


def annotation(event: dict) -> bool:
    """A record_function region or a ProfilerStep, on the host or the GPU lane."""
    return event.get("cat") in ("user_annotation", "gpu_user_annotation")


def kernel_load(event: dict) -> bool:
    """CUPTI's lazy-loading events (older CUPTI does not record them)."""
    return event.get("name") in ("Runtime Triggered Module Loading", "Lazy Function Loading")
