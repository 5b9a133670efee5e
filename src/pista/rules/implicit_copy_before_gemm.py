"""What:
A `Memset` or a `Memcpy DtoD` that the program never asked for (launched from inside a GEMM op such
as aten::addmm / aten::mm or a compiled graph, not by an explicit copy_/zero_/fill_) placed right
before a GEMM with a fused epilogue (a `bias` kernel, or one launched by aten::addmm) on the same
stream.

Why:
cuBLASLt prepares some GEMM variants (cooperative / stream-K kernels with an epilogue) by clearing
a workspace or copying the bias/output first. The device cost is small (under 1 µs for a memset),
but each one is an extra host API call (cudaMemsetAsync, 10-20 µs) per GEMM and a serial step on
the stream before the GEMM may start; in a loop of small GEMMs it adds up, and it explains
"Memset (Device)" rows in the table that no line of the program wrote.

Example:
`seed_mm4096_compile` (compiled matmul_add at 4096, addmm with a bias epilogue): in every step
aten::addmm issues cudaMemsetAsync (13.7-19.4 µs of host time) and a 0.768 µs Memset (Device) on
stream 7, then nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_bias_NNT starts 19.8-24.0 µs later.

Fix:
Usually nothing is needed for big GEMMs. When it matters (many small GEMMs): capture the step as a
CUDA graph so the extra host call disappears, or compare against the unfused form (matmul then
add) or another layout/dtype, which may pick a kernel without the preparatory memset.
"""

from __future__ import annotations

import re
from collections import defaultdict

import numpy as np

from pista.findings import Context, Finding, Severity, legacy_finding
from pista.rules._common import evidence, fmt_ns, short_name, steps_text, us

ID = "implicit-copy-before-gemm"
TITLE = "Implicit memset/copy before a GEMM with an epilogue"
SEVERITY = Severity.INFO

# Ops whose job is to copy or fill: a memset/copy they launch was written by the user.
EXPLICIT_OPS = re.compile(
    r"^aten::(copy_|_copy_from|_copy_from_and_resize|zero_|fill_|zeros|zeros_like|ones|ones_like|full|full_like"
    r"|new_zeros|new_ones|new_full|clone|contiguous|to|_to_copy|index_put_|masked_fill_|cat|stack)$"
)
# cuBLAS/cuBLASLt/CUTLASS GEMM kernel names as they appear in the fixtures (nvjet_sm90_tst_..., sm80_xmma_gemm_...)
GEMM_NAME = re.compile(r"nvjet|gemm|cutlass|xmma|cublas|sm\d+_.*tst|matmul", re.I)
# ops whose GEMM carries an epilogue (bias add, activation) by definition
EPILOGUE_OPS = frozenset({"aten::addmm", "aten::_addmm_activation", "aten::baddbmm", "aten::addbmm"})
# How close the GEMM must follow: the next device work on the stream, within this many µs of the
# copy's end. seed_mm4096_compile's GEMM starts 19.8-24.0 µs after its memset, series_linear_train's
# 21.0-23.2 µs, big_gpt_eager_20steps' up to 31.5 µs (50.3 µs cold); 100 µs still means "right before".
IMPLICIT_COPY_MAX_GAP_US = 100.0
EVIDENCE_PAIRS = 3  # memset/GEMM pairs shown; presentation


def check(ctx: Context) -> list[Finding]:
    facts = ctx.facts
    trace = facts.trace
    work = np.flatnonzero(facts.is_device_work)
    if work.size < 2:
        return []
    names = trace.name_array[trace.name[work]]
    is_fill = np.array([n.startswith("Memset") or n.startswith("Memcpy DtoD") for n in names], dtype=bool)
    if not is_fill.any():
        return []
    # next device work on the same stream (pid, tid), by start time
    order = np.lexsort((trace.ts[work], trace.tid[work], trace.pid[work]))
    w = work[order]
    same_lane = (trace.pid[w][1:] == trace.pid[w][:-1]) & (trace.tid[w][1:] == trace.tid[w][:-1])
    nxt = np.full(w.size, -1, dtype=np.int64)
    nxt[:-1] = np.where(same_lane, w[1:], -1)
    fill_sorted = is_fill[order]

    bias_gemm: dict[str, bool] = {}  # per kernel name: the regex is slow on long template names
    pairs = []
    for pos in np.flatnonzero(fill_sorted & (nxt >= 0)).tolist():
        fill, gemm = int(w[pos]), int(nxt[pos])
        fill_owner, gemm_owner = int(facts.owner[fill]), int(facts.owner[gemm])
        owner_name = trace.event_name(fill_owner) if fill_owner >= 0 else ""
        if EXPLICIT_OPS.match(owner_name) and fill_owner != gemm_owner:
            continue
        gemm_name = trace.event_name(gemm)
        gemm_op = trace.event_name(gemm_owner) if gemm_owner >= 0 else ""
        if gemm_name not in bias_gemm:
            bias_gemm[gemm_name] = "bias" in gemm_name.lower() and bool(GEMM_NAME.search(gemm_name))
        epilogue = bias_gemm[gemm_name] or gemm_op in EPILOGUE_OPS
        if not epilogue:
            continue
        gap = int(trace.ts[gemm]) - int(trace.ts[fill] + trace.dur[fill])
        if us(gap) > IMPLICIT_COPY_MAX_GAP_US:
            continue
        pairs.append((fill, gemm, gap))
    if not pairs:
        return []

    launch_ns = [int(trace.dur[facts.launcher[f]]) if facts.launcher[f] >= 0 else 0 for f, _, _ in pairs]
    device_ns = int(sum(int(trace.dur[f]) for f, _, _ in pairs))
    host_ns = int(sum(launch_ns))
    groups: dict[tuple[str, str, str], list[int]] = defaultdict(list)
    for k, (fill, gemm, _) in enumerate(pairs):
        owner = int(facts.owner[fill])
        groups[(trace.event_name(fill), trace.event_name(owner) if owner >= 0 else "?", trace.event_name(gemm))].append(k)
    parts = []
    for (fill_name, op, gemm_name), ks in groups.items():
        steps = sorted({s for s in (facts.step_of(pairs[k][0]) for k in ks) if s is not None})
        where = f" in {steps_text(steps)}" if steps else ""
        parts.append(f"{len(ks)} x {fill_name} from {op} before {short_name(gemm_name)}{where}")
    gaps = [g for _, _, g in pairs]
    ev = []
    for k in range(min(EVIDENCE_PAIRS, len(pairs))):
        fill, gemm, gap = pairs[k]
        owner = int(facts.owner[fill])
        ev.append(evidence(facts, fill, detail=f"launched inside {trace.event_name(owner) if owner >= 0 else '?'}"))
        if facts.launcher[fill] >= 0:
            ev.append(evidence(facts, int(facts.launcher[fill]), detail="its host API call"))
        ev.append(evidence(facts, gemm, detail=f"the GEMM, starts {fmt_ns(gap)} after it on the same stream"))
    return [legacy_finding(
        rule=ID,
        severity=SEVERITY,
        title=TITLE,
        message=(f"{len(pairs)} memset/copy the program did not write ran right before a GEMM with an epilogue: "
                 + "; ".join(parts) + f". {fmt_ns(device_ns)} on the GPU, {fmt_ns(host_ns)} of host API calls; "
                 f"the GEMM starts {fmt_ns(min(gaps))}-{fmt_ns(max(gaps))} after it."),
        advice=("Nothing to do for large GEMMs. For many small ones: capture the step as a CUDA graph (the extra "
                "API call goes away), or try the unfused form or another layout, which may pick a kernel "
                "without the preparatory memset."),
        evidence=ev,
        metrics={
            "pairs": len(pairs),
            "device_us": us(device_ns),
            "host_api_us": us(host_ns),
            "gap_us_min": us(min(gaps)),
            "gap_us_max": us(max(gaps)),
            "gemm_kernels": sorted({trace.event_name(g) for _, g, _ in pairs}),
        },
    )]
