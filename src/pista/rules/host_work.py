"""The host-work rule's detection. What it finds, why, an example, its impact and the fix (`pista explain
host-work`) are its docs, with the text of its findings, in pista/i18n/ftl/<lang>/host_work.ftl."""

from __future__ import annotations

import re
import sys
from collections import Counter

import numpy as np

from pista.findings import NOT_USER_FRAME, Context, Evidence, Finding, Record, steps_of
from pista.query import COMPILE_EVENT, pattern_mask
from pista.rules._common import OPTIMIZER_STEP, data_region_mask, step_at, us
from pista.timeline import Edit
from pista.trace.facts import EMPTY, Facts, Intervals, merge_intervals, per_facts

ID = "host-work"
# A stretch of the launching thread with no op or runtime call at least this long (ns) is the host's own
# work: the Python between eager ops is 5-30 µs on the H200/H100 fixtures, up to 60-110 µs with stacks in a
# Hugging Face model's modules (gpu/bert_fixed) or a tiny loop's line (gpu/capture_mm64_sync: 67-127 µs);
# a NumPy batch or a tokenizer takes milliseconds (numpy_preprocess: 3-6 ms a step).
HOST_WORK_GAP_NS = 150_000
# Around the time another thread runs ops (the autograd engine), this much (ns) on either side is the engine
# starting or finishing with the caller blocked in backward(), not work (healthy_gpt_bf16: up to 340 µs as
# profiled, in fragments).
AUTOGRAD_EDGE_NS = 400_000
# Each step's first and last this long (ns) are the profiler's own step bookkeeping (prof.step()) and the
# loop's line: 64-200 µs at the start on kernel_variability, break_item__fixed, series_mlp_eager, 170-210 µs
# at the end on eval_first_call, lazy_late_kernel, profiler_first_step.
PROFILER_STEP_EDGE_NS = 200_000
# Instants per stretch at which the deepest Python frame is read (stacks only).
FRAME_SAMPLES = 16
# A region the user names for the backward holds the autograd engine's work, whatever the trace kept of it: HTA's
# sampled traces (hta_sampled_rank0/1) drop its ops, and its 221-225 ms `## backward ##` read as Python work.
BACKWARD_REGION = re.compile(r"\bbackward\b", re.I)
# A framework's own Python (its frames' files: torch, Hugging Face, Lightning), not the user's work.
TORCH_FRAME = re.compile(r"(^|/)(torch|functorch|torchvision|torchaudio|transformers|lightning|pytorch_lightning|accelerate)/")
# ... except a library's preprocessing, which is host work the user chose and can move: Hugging Face's image and
# video processors, feature extractors, tokenizers, processors and a pipeline's preprocess/postprocess, with what
# they call (PIL, NumPy, a video decoder). TraceLens' tl_h100_timesformer: the video-classification pipeline's
# preprocess holds 215 of the 383 ms step (VideoMAE's image processor 178 ms, read_video_pyav 36 ms) with the
# GPU idle, and was read as the framework's for the 75% of it under transformers/ (53.8 of 215 ms kept).
LIBRARY_PREPROCESS = re.compile(
    r"(^|/)transformers/(?:[\w/]*/)?(?:image_processing|video_processing|processing|feature_extraction|tokenization"
    r"|image_transforms|image_utils|video_utils|audio_utils)\w*\.py\("
    r"|(^|/)transformers/pipelines/\w+\.py\(\d+\): (?:preprocess|postprocess)$")
# Under this share of the step it is not worth a finding (REVIEW.md: ~1%).
MIN_STEP_SHARE = 0.02
# A library's preprocessing is named (with its caller and its own remedies) where it holds this share of the host
# work or more: 215 of 215 ms on tl_h100_timesformer; below it the frames list shows it among the rest.
PREPROCESS_SHARE = 0.25
TOP_FRAMES = 3
EVIDENCE_GAPS = 2


class Preprocess(Record):
    """A library's preprocessing in the stretches: where it starts, the user's frame that called it, µs per step."""

    entry: str  # transformers/pipelines/video_classification.py(129): preprocess
    caller: str  # the user's frame above it ("" where the stack shows none)
    us: float


class HostWork(Record):
    steps: int
    work_us: float  # per step: the stretches' host time
    idle_us: float  # per step: of it, with the GPU idle
    stretches: int  # per step
    longest_us: float
    frames: tuple[tuple[str, float], ...]  # the user's frames in it (stacks), µs per step, most first
    between: tuple[str, str]  # the ops before and after the longest stretch ("" at a step's edge)
    preprocess: Preprocess | None = None  # a library's preprocessing holding PREPROCESS_SHARE of it or more


class Stretch(Record):
    """Note on one stretch of host work."""

    dur_us: float
    idle_us: float
    frame: str


def claimed_idle(facts: Facts) -> Intervals:
    """The GPU idle under the host's own work (empty where the rule does not fire): overhead-bound leaves it out
    (review 4's tl_mi300_timesformer: 0.3% impact beside '249 ms per-op overhead' for the preprocessing's time)."""
    found = _found(facts)
    if found is None:
        return EMPTY
    idle = found[1]
    median = float(np.median([idle.clip(int(s.start), int(s.end)).total for s in facts.steps]))
    return idle if median >= MIN_STEP_SHARE * steps_of(facts).ns else EMPTY


@per_facts
def _found(facts: Facts) -> tuple[Intervals, Intervals, Counter[tuple[str, str]], int] | None:
    """The host's own work (stretches), the GPU idle under it, the libraries' preprocessing and the launching lane."""
    if not facts.has_gpu or not facts.steps:
        return None
    lane = _launching_lane(facts)
    if lane is None:
        return None
    gaps, library = _stretches(facts, lane)
    return gaps, gaps.intersect(_gpu_idle(facts)), library, lane


def check(ctx: Context) -> list[Finding]:
    facts = ctx.facts
    found = _found(facts)
    if found is None:
        return []
    gaps, idle, library, lane = found
    # the median step's: a cold first step's set-up is cold-start's, not work every step does
    impact = ctx.step_impact(float(np.median([idle.clip(int(s.start), int(s.end)).total for s in facts.steps])))
    if impact.share < MIN_STEP_SHARE:
        return []
    n = ctx.step_count
    frames = _frames(facts, lane, gaps)
    longest = int(np.argmax(gaps.end - gaps.start))
    record = HostWork(
        steps=n, work_us=us(gaps.total) / n, idle_us=us(idle.total) / n, stretches=round(gaps.start.size / n),
        longest_us=us(gaps.end[longest] - gaps.start[longest]),
        frames=tuple((name, us(ns) / n) for name, ns in frames.most_common(TOP_FRAMES)),
        between=_between(facts, lane, int(gaps.start[longest]), int(gaps.end[longest])),
        preprocess=_preprocess(library, gaps.total, n))
    order = np.argsort(gaps.start - gaps.end, kind="stable")[:EVIDENCE_GAPS]
    ev = []
    for k in sorted(order.tolist()):
        lo, hi = int(gaps.start[k]), int(gaps.end[k])
        top = _frames(facts, lane, Intervals(gaps.start[k:k + 1], gaps.end[k:k + 1])).most_common(1)
        ev.append(_span_evidence(facts, lane, lo, hi, Stretch(us(hi - lo), us(idle.clip(lo, hi).total), top[0][0] if top else "")))
    return [Finding(ID, record, impact, ev,
                    edit=Edit("host work off the step", host_scale_spans=((gaps, 0.0),)))]


def _preprocess(library: Counter[tuple[str, str]], work_ns: int, steps: int) -> Preprocess | None:
    """The library preprocessing holding most of the host work, where it holds PREPROCESS_SHARE of it or more."""
    if not library:
        return None
    (entry, caller), ns = library.most_common(1)[0]
    return Preprocess(entry, caller, us(ns) / steps) if ns >= PREPROCESS_SHARE * work_ns else None


def _launching_lane(facts: Facts) -> int | None:
    """The host thread that runs the steps (their ProfilerStep# regions'), where the user's code runs; the
    autograd engine's thread launches more on a training step but does none of the user's work."""
    keys = facts.trace.lane_keys(np.array([s.index for s in facts.steps], np.int64))
    values, counts = np.unique(keys, return_counts=True)
    return int(values[np.argmax(counts)]) if values.size else None


def _stretches(facts: Facts, lane: int) -> tuple[Intervals, Counter[tuple[str, str]]]:
    """Inside the steps, the launching thread's stretches of HOST_WORK_GAP_NS or more with no op or runtime
    call, leaving out: data regions (data-loading's and gpu-idle's), compiling (recompilation's), and time when
    another thread runs ops (the caller asleep in backward() while the autograd engine works); with the time a
    library's preprocessing holds in them (_not_torch)."""
    trace = facts.trace
    host = facts.is_host & (facts.event_step >= 0)
    calls = host & trace.category_mask({"cpu_op", "cuda_runtime", "cuda_driver"})
    mine = trace.lane_keys(np.arange(len(trace))) == lane
    busy = _spans(facts, np.flatnonzero(calls & mine))
    others = _spans(facts, np.flatnonzero(calls & ~mine))
    # the autograd engine starting and finishing around each backward (the caller inside backward(), no op
    # recorded): 130-340 µs stretches on either side of it on healthy_gpt_bf16 and series_mlp_eager
    edges = Intervals(others.start - AUTOGRAD_EDGE_NS, others.end + AUTOGRAD_EDGE_NS)
    others = merge_intervals(edges.start, edges.end) if others.start.size else others
    owned = _spans(facts, np.flatnonzero(data_region_mask(facts) | host & trace.category_mask({"user_annotation", "cpu_op"}) & (
        pattern_mask(facts, COMPILE_EVENT) | pattern_mask(facts, OPTIMIZER_STEP))
        | host & trace.category_mask({"user_annotation"}) & pattern_mask(facts, BACKWARD_REGION)))
    out = []
    for s in facts.steps:
        gaps = busy.gaps(int(s.start), int(s.end))
        keep = (gaps.end - gaps.start) >= HOST_WORK_GAP_NS
        out.append(Intervals(gaps.start[keep], gaps.end[keep]))
    stretches = merge_intervals(np.concatenate([g.start for g in out]), np.concatenate([g.end for g in out]))
    edges = merge_intervals(np.array([v for s in facts.steps for v in (s.start, s.end - PROFILER_STEP_EDGE_NS)], np.int64),
                            np.array([v for s in facts.steps for v in (s.start + PROFILER_STEP_EDGE_NS, s.end)], np.int64))
    stretches = stretches.subtract(others).subtract(owned).subtract(edges)
    keep = (stretches.end - stretches.start) >= HOST_WORK_GAP_NS
    return _not_torch(facts, lane, Intervals(stretches.start[keep], stretches.end[keep]))


def _not_torch(facts: Facts, lane: int, stretches: Intervals) -> tuple[Intervals, Counter[tuple[str, str]]]:
    """The stretches less the parts where torch's own Python runs (the deepest frame there is torch's:
    torch.func.vmap's wrappers, 6.5 ms of a step in savings/h100/loop_ensemble__fixed), judged at
    FRAME_SAMPLES instants each; all of them where the trace has no stacks. A framework frame under a library's
    preprocessing (LIBRARY_PREPROCESS) is the user's work; that time is counted too, by the preprocessing's entry
    frame and the user's frame that called it (ns over the window)."""
    trace = facts.trace
    library: Counter[tuple[str, str]] = Counter()
    frames = np.flatnonzero(facts.is_host & trace.category_mask({"python_function"}))
    frames = frames[trace.lane_keys(frames) == lane]
    if not frames.size or not stretches.start.size:
        return stretches, library
    names = np.unique(trace.name[frames])
    # a built-in (`<built-in method ...>`) is the work of the Python frame that called it: NumPy's for the
    # user's code, functorch's C++ for torch's wrappers
    code = names[[not trace.names[int(k)].startswith("<") for k in names.tolist()]]
    frames = frames[np.isin(trace.name[frames], code)]
    if not frames.size:
        return stretches, library
    stacks = _Stacks(facts, frames[np.argsort(trace.ts[frames], kind="stable")], code)
    keep_lo, keep_hi = [], []
    for a, b in zip(stretches.start.tolist(), stretches.end.tolist(), strict=True):
        points = a + (np.arange(FRAME_SAMPLES) + 0.5) * (b - a) / FRAME_SAMPLES
        framework = 0
        for t in points.tolist():
            j = stacks.deepest(t)
            entry = stacks.preprocess_entry(j)
            if entry >= 0:
                library[(trace.event_name(entry), stacks.caller(entry))] += (b - a) // FRAME_SAMPLES
            elif stacks.is_framework(j):
                framework += 1
        share = framework / FRAME_SAMPLES
        if share < 1.0:  # the stretch, shortened by the share torch's own Python holds
            keep_lo.append(a)
            keep_hi.append(a + round((b - a) * (1.0 - share)))
    return Intervals(np.array(keep_lo, np.int64), np.array(keep_hi, np.int64)), library


class _Stacks:
    """The thread's Python frames, for reading the stack at an instant: the deepest frame, whether it is a
    framework's (TORCH_FRAME), and where a library's preprocessing (LIBRARY_PREPROCESS) holds it."""

    def __init__(self, facts: Facts, frames: np.ndarray, code: np.ndarray) -> None:
        trace = facts.trace
        self.facts = facts
        self.frames = frames  # in time order
        self.is_frame = np.zeros(len(trace), dtype=bool)
        self.is_frame[frames] = True
        self.torch_ids = code[[bool(TORCH_FRAME.search(trace.names[int(k)])) for k in code.tolist()]]
        self.preprocess_ids = code[[bool(LIBRARY_PREPROCESS.search(trace.names[int(k)])) for k in code.tolist()]]

    def deepest(self, t: float) -> int:
        """The deepest frame running at t, the standard library's climbed out of (-1: none)."""
        return _caller_of_stdlib(self.facts, _deepest_frame(self.facts, self.frames, self.is_frame, t), self.is_frame)

    def is_framework(self, j: int) -> bool:
        return j >= 0 and bool(np.isin(self.facts.trace.name[j], self.torch_ids))

    def preprocess_entry(self, j: int) -> int:
        """The outermost preprocessing frame on j's stack (-1: none): where the library's preprocessing starts
        (PIL or NumPy called from it included)."""
        if not self.preprocess_ids.size:
            return -1
        trace, entry = self.facts.trace, -1
        while j >= 0:
            if self.is_frame[j] and np.isin(trace.name[j], self.preprocess_ids):
                entry = j
            j = int(self.facts.parent[j])
        return entry

    def caller(self, entry: int) -> str:
        """The user's frame that called into the library: the first above `entry` that is no framework's
        and not the standard library's ("" where none is recorded)."""
        trace = self.facts.trace
        j = int(self.facts.parent[entry])
        while j >= 0:
            name = trace.event_name(j)
            if self.is_frame[j] and not self.is_framework(j) and not _stdlib(name) and not name.startswith("<"):
                return name
            j = int(self.facts.parent[j])
        return ""


def _deepest_frame(facts: Facts, frames: np.ndarray, is_frame: np.ndarray, t: float) -> int:
    """The deepest Python frame running at t: the last to start before it, or the nearest frame above that
    one still running (frames nest on a thread), or -1."""
    trace = facts.trace
    k = int(np.searchsorted(trace.ts[frames], t, side="right")) - 1
    j = int(frames[k]) if k >= 0 else -1
    while j >= 0 and (trace.ts[j] + trace.dur[j] <= t or not is_frame[j]):
        j = int(facts.parent[j])
    return j


def _caller_of_stdlib(facts: Facts, j: int, is_frame: np.ndarray) -> int:
    """The frame whose work j is: j, or where j is the standard library's (inspect, typing, json...), the
    first frame above it that is not: Hugging Face's signature checks run in inspect.py (TraceLens'
    tl_h100_bert_small: 148 µs a step in inspect's get_annotations under transformers' forward), the
    framework's work, not the user's."""
    trace = facts.trace
    while j >= 0 and (not is_frame[j] or _stdlib(trace.event_name(j))):
        j = int(facts.parent[j])
    return j


def _stdlib(name: str) -> bool:
    """Whether a Python frame ("inspect.py(176): get_annotations", "json/decoder.py(337): decode") is in a
    module of the standard library (torch writes their paths without the installation's prefix)."""
    top = name.split("(", 1)[0].split("/", 1)[0]
    return top.removesuffix(".py") in sys.stdlib_module_names


def _spans(facts: Facts, idx: np.ndarray) -> Intervals:
    trace = facts.trace
    return merge_intervals(trace.ts[idx], trace.ts[idx] + trace.dur[idx]) if idx.size else EMPTY


def _gpu_idle(facts: Facts) -> Intervals:
    """The window's time with the busiest device idle."""
    lo, hi = facts.window
    busy = max(facts.gpu_busy.values(), key=lambda iv: iv.total, default=EMPTY)
    return busy.gaps(lo, hi)


def _frames(facts: Facts, lane: int, gaps: Intervals) -> Counter[str]:
    """The user's Python frames on the thread, by the stretch time each holds itself (its own user frames
    below it left out): where the stacks were recorded."""
    trace = facts.trace
    frame = facts.is_host & trace.category_mask({"python_function"})
    idx = np.flatnonzero(frame)
    idx = idx[trace.lane_keys(idx) == lane]
    names = np.unique(trace.name[idx])  # judged once per name, not per frame (a with_stack trace has 10^5-10^6)
    user_ids = names[[_is_user(trace.names[int(k)]) for k in names.tolist()]] if names.size else names
    idx = idx[np.isin(trace.name[idx], user_ids)]
    out: Counter[str] = Counter()
    if not idx.size:
        return out
    held = gaps.covered(trace.ts[idx], trace.ts[idx] + trace.dur[idx])
    is_user = np.zeros(len(trace), dtype=bool)
    is_user[idx] = True
    some = held > 0
    for i, ns in zip(idx[some].tolist(), held[some].tolist(), strict=True):
        if ns > 0:
            out[trace.event_name(i)] += ns
            up = _user_parent(facts, i, is_user)
            if up >= 0:
                out[trace.event_name(up)] -= ns
    return Counter({k: v for k, v in out.items() if v > 0})


def _user_parent(facts: Facts, i: int, is_user: np.ndarray) -> int:
    j = int(facts.parent[i])
    while j >= 0 and not is_user[j]:
        j = int(facts.parent[j])
    return j


def _is_user(name: str) -> bool:
    return ".py(" in name and not NOT_USER_FRAME.search(name) and not _stdlib(name)


def _between(facts: Facts, lane: int, lo: int, hi: int) -> tuple[str, str]:
    """The outermost ops that end right before and start right after [lo, hi) on the thread."""
    trace = facts.trace
    ops = np.flatnonzero(facts.is_host & trace.category_mask({"cpu_op"}) & (facts.event_step >= 0))
    ops = ops[trace.lane_keys(ops) == lane]
    end = trace.ts[ops] + trace.dur[ops]
    before = ops[end <= lo]
    after = ops[trace.ts[ops] >= hi]
    prev = trace.event_name(int(before[np.argmax(end[end <= lo])])) if before.size else ""
    nxt = trace.event_name(int(after[np.argmin(trace.ts[after])])) if after.size else ""
    return prev, nxt


def _span_evidence(facts: Facts, lane: int, lo: int, hi: int, note: Stretch) -> Evidence:
    """The stretch as evidence on the host thread."""
    trace = facts.trace
    one = np.flatnonzero(facts.is_host & (trace.lane_keys(np.arange(len(trace))) == lane))[:1]
    label = trace.lane_label(int(trace.pid[one[0]]), int(trace.tid[one[0]])) if one.size else "host"
    return Evidence.span("host work", label, lo, hi, step_at(facts, lo), note)
