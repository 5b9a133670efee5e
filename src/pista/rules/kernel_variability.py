"""What:
The same kernel, with the same launch configuration (grid and block from the trace) and the same
input shapes on the op that launched it (where the trace recorded shapes), takes very
different times from call to call or from step to step: the tail of its distribution (p95, max)
stands far above its median, beyond timer and clock noise.

Why:
Identical launches doing identical work should take the same time. A wide spread means something
outside the kernel changes: other streams or processes sharing the SMs, clock/power throttling,
cold caches or TLBs after other work, data-dependent work (sorts, sparse ops). The mean hides it;
the slow calls are what stretch the step.

Example:
`tests/fixtures/gpu/kernel_variability` (an elementwise mul on 64 MiB, 8 calls a step, a second
stream running GEMMs in steps 3 and 6): vectorized_elementwise_kernel grid [32768,1,1] block
[128,1,1], 48 calls, median 33.5 µs, p95 53.2 µs (1.59x), max 54.2 µs; its median per step is
32.0-32.2 µs except 50.7 µs and 51.8 µs in steps 3 and 6.

Fix:
Find what overlaps the slow calls (the evidence's timestamps; other streams, other processes,
nvidia-smi for clocks), serialise or separate the competing work, warm caches, pin clocks for
benchmarks, and compare step medians rather than means.
"""

from __future__ import annotations

import msgspec
import numpy as np

from pista.findings import Context, Finding, Severity, legacy_finding
from pista.rules._common import evidence, fmt_ns, short_name
from pista.trace.facts import Facts

ID = "kernel-variability"
TITLE = "The same kernel varies from call to call"
SEVERITY = Severity.WARNING

# Launches with the same name and grid/block, at least this many to speak of a distribution.
KV_MIN_CALLS = 3
# Short kernels jitter by a few hundred ns (launch and timer granularity): big_gpt_eager_20steps'
# 2 µs copy kernel has max/median 1.29 from that alone. Below 5 µs the ratios say nothing.
KV_MIN_MEDIAN_US = 5.0
# p95/median. Across all the steady fixtures (14560 kernels in big_gpt_eager_20steps, series_*,
# seed_*) no group of median >= 5 µs exceeds 1.22 (a 5.9 µs CUB radix sort); the contended kernel
# in kernel_variability reaches 1.59.
KV_P95_RATIO = 1.4
# ...or a single outlier: max/median. The steady fixtures stay at or under 1.25 for median >= 5 µs.
KV_MAX_RATIO = 2.0
# The time the slow calls cost over the median, at least this share of the group's total:
# kernel_variability's group loses 17%; keeps rare, tiny excursions out.
KV_MIN_EXCESS_SHARE = 0.02
KV_MAX_FINDINGS = 3  # the groups with the most excess time; one finding each
KV_MAX_SAMPLES = 2000  # durations kept in metrics for the report's plot
EVIDENCE_SLOW = 3  # slowest calls shown, plus one typical call; presentation


def check(ctx: Context) -> list[Finding]:
    facts = ctx.facts
    trace = facts.trace
    kernels = _could_vary(facts, np.flatnonzero(facts.is_device_work & trace.category_mask({"kernel"})))
    if kernels.size < KV_MIN_CALLS:
        return []
    config, shapes = launch_keys(facts, kernels)
    # same name, same grid/block, same input shapes of the launching op: the same work
    groups: dict[tuple, int] = {}
    inverse = np.fromiter((groups.setdefault(key, len(groups)) for key in
                           zip(trace.name[kernels].tolist(), config.tolist(), shapes.tolist(), strict=True)),
                          dtype=np.int64, count=kernels.size)
    counts = np.bincount(inverse, minlength=len(groups))
    by_group = np.argsort(inverse, kind="stable")
    bounds = np.concatenate(([0], np.cumsum(counts)))
    found = []
    for g in np.flatnonzero(counts >= KV_MIN_CALLS).tolist():
        rows = by_group[bounds[g]:bounds[g + 1]]
        members = kernels[rows]
        dur = trace.dur[members].astype(np.float64)
        median = float(np.median(dur))
        if median < KV_MIN_MEDIAN_US * 1000.0:
            continue
        p95, top = float(np.percentile(dur, 95)), float(dur.max())
        excess = float(np.clip(dur - median, 0, None).sum())
        if (p95 / median < KV_P95_RATIO and top / median < KV_MAX_RATIO) or excess < KV_MIN_EXCESS_SHARE * dur.sum():
            continue
        found.append((excess, members, dur, median, p95, top, str(config[rows[0]]), str(shapes[rows[0]])))
    found.sort(key=lambda f: -f[0])
    return [_finding(ctx, *f) for f in found[:KV_MAX_FINDINGS]]


def _could_vary(facts: Facts, kernels: np.ndarray) -> np.ndarray:
    """The kernels whose name group could hold a group that fires, before any args are read: a
    group's max/median is at most its name's max/min, and its median at most its name's max."""
    if kernels.size == 0:
        return kernels
    names, inverse, counts = np.unique(facts.trace.name[kernels], return_inverse=True, return_counts=True)
    dur = facts.trace.dur[kernels]
    longest = np.zeros(names.size, dtype=np.int64)
    shortest = np.full(names.size, np.iinfo(np.int64).max, dtype=np.int64)
    np.maximum.at(longest, inverse, dur)
    np.minimum.at(shortest, inverse, dur)
    possible = ((counts >= KV_MIN_CALLS) & (longest >= KV_MIN_MEDIAN_US * 1000.0)
                & (longest >= min(KV_P95_RATIO, KV_MAX_RATIO) * shortest))
    return kernels[possible[inverse]]


def _finding(ctx: Context, excess: float, members: np.ndarray, dur: np.ndarray, median: float, p95: float,
             top: float, config: str, shapes: str) -> Finding:
    facts = ctx.facts
    trace = facts.trace
    order = np.argsort(trace.ts[members], kind="stable")
    members, dur = members[order], dur[order]
    name = trace.event_name(int(members[0]))
    lo = float(dur.min())
    step_ids = facts.event_step[members]
    per_step = {}
    for s in np.unique(step_ids[step_ids >= 0]).tolist():
        per_step[facts.steps[s].number] = float(np.median(dur[step_ids == s])) / 1000.0
    slow = np.argsort(-dur, kind="stable")[:EVIDENCE_SLOW]
    typical = int(np.argmin(np.abs(dur - median)))
    ev = [evidence(facts, int(members[k]), detail=f"{dur[k] / median:.2f}x the median") for k in slow]
    ev.append(evidence(facts, int(members[typical]), detail="a typical call (nearest the median)"))
    step_text = ""
    if len(per_step) >= 2:
        meds = np.array(list(per_step.values()))
        slow_steps = [s for s, m in per_step.items() if m >= KV_P95_RATIO * float(np.median(meds))]
        if slow_steps:
            step_text = (" Median per step " + f"{meds.min():.1f}-{meds.max():.1f} µs; slow in step"
                         + ("s " if len(slow_steps) > 1 else " ") + ", ".join(map(str, slow_steps)) + ".")
    samples = dur[:KV_MAX_SAMPLES] / 1000.0
    return legacy_finding(
        rule=ID,
        severity=SEVERITY,
        title=TITLE,
        message=(f"{short_name(name)} ({config or 'no launch config in the trace'}"
                 f"{', inputs ' + shapes if shapes else ''}) over {members.size} calls: "
                 f"min {fmt_ns(lo)}, median {fmt_ns(median)}, p95 {fmt_ns(p95)} ({p95 / median:.2f}x), "
                 f"max {fmt_ns(top)} ({top / median:.2f}x); the calls above the median cost {fmt_ns(excess)} "
                 f"more than the median would.{step_text}"),
        advice=("Look at what overlaps the slowest calls (other streams, other processes, clocks), separate or "
                "serialise the competing work, and compare medians per step rather than means."),
        evidence=ev,
        metrics={
            "name": name,
            "launch_config": config,
            "input_dims": shapes,
            "calls": int(members.size),
            "min_us": lo / 1000.0,
            "median_us": median / 1000.0,
            "mean_us": float(dur.mean()) / 1000.0,
            "p95_us": p95 / 1000.0,
            "max_us": top / 1000.0,
            "p95_over_median": p95 / median,
            "max_over_median": top / median,
            "excess_us": excess / 1000.0,
            "step_median_us": per_step,
            "durations_us": [round(float(x), 3) for x in samples],
        },
    )


def launch_keys(facts: Facts, kernels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For the kernels (event indices): 'grid x block' from their args and their launching op's
    'Input Dims' as text ('' where the trace has none). Persistent GEMM kernels launch one CTA per
    SM whatever the problem size, so grid/block alone do not say 'same work'."""
    trace = facts.trace
    config = np.full(kernels.size, "", dtype=object)
    shapes = np.full(kernels.size, "", dtype=object)
    config_text: dict[tuple[bytes, bytes], str] = {}
    for i, launch in enumerate(trace.decode_args(kernels, _LaunchArgs)):
        if launch is None:
            continue
        key = (bytes(launch.grid), bytes(launch.block))
        if key == (b"", b""):
            continue
        text = config_text.get(key)
        if text is None:  # a few distinct configs: format each once
            text = config_text[key] = f"grid {_raw_dims(key[0])} block {_raw_dims(key[1])}"
        config[i] = text
    owners = facts.owner[kernels]
    unique_owners = np.unique(owners[owners >= 0])
    owner_dims = {o: _raw_text(op.input_dims) if op is not None else ""
                  for o, op in zip(unique_owners.tolist(), trace.decode_args(unique_owners, _OpArgs), strict=True)}
    for i, owner in enumerate(owners.tolist()):
        if owner >= 0:
            shapes[i] = owner_dims[owner]
    return config, shapes


# Typed decodes (trace.decode_args) read only these fields, kept as raw JSON text (hashable, and
# already the text shown): a generic args() decode of every kernel dominated this rule's time.
_MISSING = msgspec.Raw(b"")


class _LaunchArgs(msgspec.Struct, gc=False):
    grid: msgspec.Raw = _MISSING
    block: msgspec.Raw = _MISSING


class _OpArgs(msgspec.Struct, gc=False):
    input_dims: msgspec.Raw = msgspec.field(name="Input Dims", default=_MISSING)


def _raw_text(raw: msgspec.Raw) -> str:
    text = bytes(raw).decode("utf-8", "replace")
    return "" if text in ("", "[]", "null") else text


def _raw_dims(raw: bytes) -> str:
    if not raw:
        return "None"
    try:
        return _dims(msgspec.json.decode(raw))
    except msgspec.DecodeError:
        return raw.decode("utf-8", "replace")


def _dims(value: object) -> str:
    if isinstance(value, list):
        return "[" + ",".join(str(v) for v in value) + "]"
    return str(value)
