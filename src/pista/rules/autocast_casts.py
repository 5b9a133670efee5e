"""The autocast-casts rule's detection. What it finds, why, an example, its impact and the fix (`pista explain
autocast-casts`) are its docs, with the text of its findings, in pista/i18n/ftl/<lang>/autocast_casts.ftl."""

from __future__ import annotations

import functools
import re
from collections import defaultdict
from typing import Any

import msgspec
import numpy as np

from pista.efficiency import MEMO_SIZE
from pista.findings import Context, Evidence, Finding, Record, steps_of
from pista.opargs import OpArgs, op_args
from pista.purpose import CODE, classify
from pista.query import name_mask, nearest_in
from pista.rules._common import device_ns_in_window, idle_ns_in, us
from pista.rules._idle import idle_under
from pista.timeline import Edit
from pista.trace.facts import Facts, Intervals, per_facts

ID = "autocast-casts"
TO_COPY = frozenset({"aten::_to_copy"})
CAST_WRAPPERS = frozenset({"aten::to", "aten::_to_copy", "aten::copy_"})
BACKWARD = frozenset({"ToCopyBackward0"})
# The ops autocast casts the arguments of, as torch 2.x records them: the cast sits directly under
# the op (gpu/gpt_autocast: aten::linear > aten::to > aten::_to_copy).
AUTOCAST_OPS = re.compile(r"^aten::(linear|matmul|mm|addmm|bmm|baddbmm|addbmm|conv\d?d|convolution|_convolution"
                          r"|conv_transpose\dd|prelu|_scaled_mm)$")
# The input (activation) among an op's arguments, where it is not the first: addmm(bias, input,
# weight) and its batched kin (transformers' GPT-2 Conv1D is an addmm: gpu/gpt2_conv1d's 4096x768
# and 4096x3072 activation casts are not weights).
INPUT_ARG = {"aten::addmm": 1, "aten::baddbmm": 1, "aten::addbmm": 1}
# torch's ScalarType codes, as `Concrete Inputs` records the dtype argument of aten::_to_copy.
SCALAR_TYPES = {"5": "c10::Half", "6": "float", "7": "double", "15": "c10::BFloat16"}
# Below this share of the step the casts are noise (REVIEW.md); gpu/gpt_bf16_fused (bf16 weights)
# has no weight casts at all, series_linear_train's one explicit .to() per step is not autocast's.
MIN_IMPACT_SHARE = 0.01
EVIDENCE_EVENTS = 4
TOP_SHAPES = 4
# Casts whose ops' args are held at a time: an OpArgs and its read per op, ~250 bytes (a 1 GB copy
# of big_gpt_eager_20steps reads 570 k ops: 190 MiB at once). Memory, not output.
CAST_CHUNK = 1 << 14


class CastShape(Record):
    shape: tuple[int, ...]
    per_step: float  # weight casts of this shape per step, forward and backward
    us: float  # per step


class AutocastCasts(Record):
    steps: int
    weights: int  # forward weight casts per step (one per weight or bias)
    casts_per_step: float  # weight casts per step, forward and backward
    forward_us: float  # per step
    backward_us: float  # per step
    weight_us: float  # per step, both
    host_us: float  # per step: the host dispatching those casts (aten::to, ToCopyBackward0)
    exposed_host_us: float  # per step: of that, with the GPU idle
    other_cast_us: float  # per step: activation casts and explicit .to()/.float()
    cast_us: float  # per step: every cast kernel
    cast_share_percent: float  # of the device time
    weight_share_percent: float  # of the device time
    source_dtype: str  # as torch records it: "float"
    target_dtype: str  # "c10::BFloat16"
    ops: tuple[str, ...]  # the ops whose weights were cast: aten::linear
    shapes: tuple[CastShape, ...]  # most time first
    step_share_percent: float


class WeightCast(Record):
    """Note on a forward weight cast op."""

    op: str
    shape: tuple[int, ...]
    kernel_us: float


class GradCast(Record):
    """Note on the backward cast of a weight's gradient."""

    shape: tuple[int, ...]
    kernel_us: float


def claimed_idle(facts: Facts) -> Intervals:
    """The GPU idle under the host's weight casts (empty where the rule does not fire): overhead-bound
    leaves it out."""
    found = _found(facts)
    return idle_under(facts, found[1] if found else np.empty(0, np.int64))


def check(ctx: Context) -> list[Finding]:
    found = _found(ctx.facts)
    return [found[0]] if found else []


@per_facts
def _found(facts: Facts) -> tuple[Finding, np.ndarray] | None:
    """The finding and the host's cast calls it counts (their idle is its)."""
    if not facts.has_gpu:
        return None
    trace = facts.trace
    codes = classify(facts)
    casts = np.flatnonzero(codes == CODE["cast"])
    if facts.steps:
        casts = casts[facts.event_step[casts] >= 0]
    if casts.size == 0:
        return None
    source = np.where(facts.owner[casts] >= 0, facts.owner[casts], facts.launcher[casts])
    copy_op = np.where(source >= 0, nearest_in(facts, facts.is_host & name_mask(facts, TO_COPY), source), -1)
    backward = np.where(copy_op >= 0, nearest_in(facts, facts.is_host & name_mask(facts, BACKWARD), copy_op), -1)
    user = _users(facts, copy_op)
    ahead = (copy_op >= 0) & (user >= 0) & (backward < 0)
    if not ahead.any():
        return None  # no forward cast under an autocast op
    forward, grads = _weight_casts(facts, casts, copy_op, user, backward)
    if not forward:
        return None
    scale = steps_of(facts)
    steps = scale.count
    fwd_ns = float(_total_ns(trace, forward))
    bwd_ns = float(_total_ns(trace, grads))
    weight_ns = fwd_ns + bwd_ns
    # the host side: each forward cast's aten::to under the op, each gradient's ToCopyBackward0
    pairs = np.array([(c, u) for c, u, _ in forward.values()], dtype=np.int64).reshape(-1, 2)
    host_ops = set(_cast_calls(facts, pairs[:, 0], pairs[:, 1]).tolist()) | {b for b, _ in grads.values()}
    ops = np.fromiter(host_ops, dtype=np.int64, count=len(host_ops))
    host_ns = float(trace.dur[ops].sum())
    exposed_ns = float(idle_ns_in(facts, ops).sum())
    # the kernels' time shortens a host-bound step only in part (run_mlp_stack: an expert's replay saved
    # ~750 µs where kernels + exposed host said 811); the host's exposed time in full
    impact = scale.per_step(weight_ns * scale.busy + exposed_ns)
    if impact.share < MIN_IMPACT_SHARE:
        return None
    cast_ns = float(trace.dur[casts].sum())
    device_ns = device_ns_in_window(facts)
    src, dst = _dtypes(facts, [c for c, _, _ in forward.values()])
    record = AutocastCasts(
        steps=steps, weights=round(len(forward) / steps), casts_per_step=(len(forward) + len(grads)) / steps,
        forward_us=us(fwd_ns) / steps, backward_us=us(bwd_ns) / steps, weight_us=us(weight_ns) / steps,
        host_us=us(host_ns) / steps, exposed_host_us=us(exposed_ns) / steps,
        other_cast_us=us(cast_ns - weight_ns) / steps, cast_us=us(cast_ns) / steps,
        cast_share_percent=100.0 * cast_ns / device_ns, weight_share_percent=100.0 * weight_ns / device_ns,
        source_dtype=src, target_dtype=dst,
        ops=tuple(sorted({trace.event_name(u) for _, u, _ in forward.values()})),
        shapes=_shapes(trace, forward, grads, steps), step_share_percent=100.0 * impact.share)
    kernels = np.fromiter([*forward, *grads], dtype=np.int64, count=len(forward) + len(grads))
    outer = _redispatched(facts, np.unique(pairs[:, 1]))
    edit = Edit("bf16 weights", remove=np.concatenate((ops, kernels)),
                host_remove_ns=(trace.ts[outer].astype(np.float64), np.maximum(facts.self_time[outer], 0).astype(np.float64)))
    return Finding(ID, record, impact, _evidence(facts, forward, grads), edit=edit), ops


def _weight_casts(facts: Facts, casts: np.ndarray, copy_op: np.ndarray, user: np.ndarray, backward: np.ndarray
                  ) -> tuple[dict[int, tuple[int, int, tuple[int, ...]]], dict[int, tuple[int, tuple[int, ...]]]]:
    """The forward casts of weights and their gradients' casts, CAST_CHUNK casts at a time (what is
    read of their ops' args is held one chunk at a time)."""
    forward: dict[int, tuple[int, int, tuple[int, ...]]] = {}
    seqs: set[int] = set()
    inputs = _input_args(facts, user)
    for part in _chunks(casts.size):
        # the forward and backward casts' ops in one read: a read of scattered args spans most of the file
        ahead, behind = (copy_op[part] >= 0) & (user[part] >= 0) & (backward[part] < 0), backward[part] >= 0
        args = _decode(facts, {*copy_op[part][ahead].tolist(), *user[part][ahead].tolist(),
                               *copy_op[part][behind].tolist(), *backward[part][behind].tolist()})
        found, found_seqs = _forward(args, casts[part], copy_op[part], user[part], backward[part], inputs[part])
        forward.update(found)
        seqs |= found_seqs
    grads: dict[int, tuple[int, tuple[int, ...]]] = {}
    for part in _chunks(casts.size):  # every forward cast's sequence number known; their args read above
        behind = backward[part] >= 0
        args = _decode(facts, {*copy_op[part][behind].tolist(), *backward[part][behind].tolist()})
        grads.update(_grads(args, casts[part], copy_op[part], backward[part], seqs))
    return forward, grads


def _chunks(n: int) -> list[slice]:
    return [slice(lo, lo + CAST_CHUNK) for lo in range(0, n, CAST_CHUNK)]


def _input_args(facts: Facts, user: np.ndarray) -> np.ndarray:
    """Per cast: where its op takes its input among its arguments (INPUT_ARG; 0 without an op)."""
    trace = facts.trace
    table = np.array([INPUT_ARG.get(name, 0) for name in trace.names], dtype=np.int8)
    return np.where(user >= 0, table[trace.name[user]], 0)


def _forward(args: dict[int, OpArgs | None], casts: np.ndarray, copy_op: np.ndarray, user: np.ndarray,
             backward: np.ndarray, inputs: np.ndarray) -> tuple[dict[int, tuple[int, int, tuple[int, ...]]], set[int]]:
    """kernel -> (copy op, user op, shape) of the forward casts of an op's weight or bias, and their
    copy ops' autograd sequence numbers."""
    ahead = (copy_op >= 0) & (user >= 0) & (backward < 0)
    forward: dict[int, tuple[int, int, tuple[int, ...]]] = {}
    seqs = set()
    for k, c, u, i in zip(casts[ahead].tolist(), copy_op[ahead].tolist(), user[ahead].tolist(),
                          inputs[ahead].tolist(), strict=True):
        shape = _first_shape(args[c])
        if shape and _is_weight(args[u], shape, i):
            forward[k] = (c, u, shape)
            seq = a.seq if (a := args[c]) is not None else None
            if isinstance(seq, int):
                seqs.add(seq)
    return forward, seqs


def _grads(args: dict[int, OpArgs | None], casts: np.ndarray, copy_op: np.ndarray, backward: np.ndarray,
           seqs: set[int]) -> dict[int, tuple[int, tuple[int, ...]]]:
    """kernel -> (backward node, shape) of the casts of those weights' gradients back (the
    ToCopyBackward0 of a forward cast's sequence number)."""
    grads: dict[int, tuple[int, tuple[int, ...]]] = {}
    if not seqs:
        return grads
    behind = backward >= 0
    for k, c, b in zip(casts[behind].tolist(), copy_op[behind].tolist(), backward[behind].tolist(), strict=True):
        node = args[b]
        seq = None if node is None else node.seq
        if isinstance(seq, int) and seq in seqs:
            grads[k] = (b, _first_shape(args[c]) or ())
    return grads


def _total_ns(trace, kernels: dict[int, Any]) -> int:
    return int(trace.dur[np.fromiter(kernels, dtype=np.int64, count=len(kernels))].sum())


def _redispatched(facts: Facts, users: np.ndarray) -> np.ndarray:
    """The autocast ops that call themselves again: autocast's dispatch records each op twice (an aten::linear
    holding an aten::linear), and the outer call's own host time goes with autocast (savings/h100/autocast_infer:
    66 aten::linear a step for 33 layers, ~0.3 ms of own time; its bf16 twin records each once)."""
    inner = np.flatnonzero(np.isin(facts.parent, users) & facts.is_host)
    same = inner[facts.trace.name[inner] == facts.trace.name[facts.parent[inner]]]
    return np.unique(facts.parent[same]).astype(np.int64)


def _cast_calls(facts: Facts, copies: np.ndarray, users: np.ndarray) -> np.ndarray:
    """Per forward cast, the outermost cast op under its user op (aten::to > aten::_to_copy): the
    host's cast call. All walk up the tree together, one level a pass."""
    j = copies.copy()
    while True:
        up = facts.parent[j]
        step = (up >= 0) & (up != users)
        if not step.any():
            return j
        j[step] = up[step]


def _users(facts: Facts, copy_op: np.ndarray) -> np.ndarray:
    """Per cast: the op it was cast for (the first ancestor above aten::to/_to_copy) if autocast's."""
    trace = facts.trace
    wrapper = np.array([n in CAST_WRAPPERS for n in trace.names], dtype=bool)
    autocast = np.array([AUTOCAST_OPS.search(n) is not None for n in trace.names], dtype=bool)
    parent = facts.parent
    # index -1 (no event) reads the last event: masked by j >= 0
    j = np.where(copy_op >= 0, parent[copy_op], -1)
    while (step := (j >= 0) & wrapper[trace.name[j]]).any():  # climb the wrappers, all casts at once
        j[step] = parent[j[step]]
    return np.where((j >= 0) & autocast[trace.name[j]], j, -1)


def _decode(facts: Facts, ops: set[int]) -> dict[int, OpArgs | None]:
    idx = sorted(ops)
    return dict(zip(idx, op_args(facts, idx), strict=True))


def _shape(value: Any) -> tuple[int, ...] | None:
    if isinstance(value, list) and value and all(isinstance(v, int) for v in value):
        return tuple(value)
    return None


def _first_shape(a: OpArgs | None) -> tuple[int, ...] | None:
    return None if a is None else _first_shape_of(a.dims_text)


@functools.lru_cache(maxsize=MEMO_SIZE)
def _first_shape_of(dims_text: bytes) -> tuple[int, ...] | None:
    dims = msgspec.json.decode(dims_text)
    return _shape(dims[0]) if isinstance(dims, list) and dims else None


def _is_weight(a: OpArgs | None, shape: tuple[int, ...], input_arg: int) -> bool:
    """The cast tensor is one of the op's other arguments (weight, bias), not its input."""
    return a is not None and _is_weight_of(a.dims_text, shape, input_arg)


@functools.lru_cache(maxsize=MEMO_SIZE)
def _is_weight_of(dims_text: bytes, shape: tuple[int, ...], input_arg: int) -> bool:
    dims = msgspec.json.decode(dims_text)
    if not isinstance(dims, list):
        return False
    return any(_shape(d) == shape for k, d in enumerate(dims) if k != input_arg)


def _dtypes(facts: Facts, copies: list[int]) -> tuple[str, str]:
    """The weights' dtype (the copy's input type) and the one autocast cast them to (the copy's
    dtype argument, a ScalarType code in `Concrete Inputs`)."""
    for part in _chunks(len(copies)):
        for a in op_args(facts, copies[part]):
            if a is None or not isinstance(a.types, list) or not a.types:
                continue
            target = a.concrete[1] if isinstance(a.concrete, list) and len(a.concrete) > 1 else ""
            return str(a.types[0]), SCALAR_TYPES.get(str(target), str(target))
    return "", ""


def _shapes(trace, forward: dict, grads: dict, steps: int) -> tuple[CastShape, ...]:
    count: dict[tuple[int, ...], int] = defaultdict(int)
    time: dict[tuple[int, ...], int] = defaultdict(int)
    for k, (_, _, shape) in forward.items():
        count[shape] += 1
        time[shape] += int(trace.dur[k])
    for k, (_, shape) in grads.items():
        count[shape] += 1
        time[shape] += int(trace.dur[k])
    top = sorted(time, key=lambda s: -time[s])[:TOP_SHAPES]
    return tuple(CastShape(s, count[s] / steps, us(time[s]) / steps) for s in top)


def _evidence(facts: Facts, forward: dict, grads: dict) -> list[Evidence]:
    trace = facts.trace
    out = []
    for k in sorted(forward, key=lambda k: -int(trace.dur[k]))[: EVIDENCE_EVENTS // 2]:
        c, u, shape = forward[k]
        out.append(Evidence.of(facts, c, WeightCast(trace.event_name(u), shape, us(trace.dur[k]))))
    for k in sorted(grads, key=lambda k: -int(trace.dur[k]))[: EVIDENCE_EVENTS // 2]:
        b, shape = grads[k]
        out.append(Evidence.of(facts, b, GradCast(shape, us(trace.dur[k]))))
    return out
