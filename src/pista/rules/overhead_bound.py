"""What:
The host spends far longer issuing work than the GPU spends doing it: Self CPU total is many
times Self CUDA total (typically ms against µs) and the GPU sits idle most of the window.

Why:
Each op pays a fixed toll in Python, the dispatcher and the CUDA launch path, tens of µs. When a
kernel runs for 2 µs, that toll is the runtime: a faster GPU, or a faster kernel, changes nothing.

Example:
`torch.add(torch.matmul(x, w), b)` at 64x64 in bf16 on an H200: 510 µs of Self CPU for 12 µs of
Self CUDA per 3 steps; the GPU is busy 2% of the window.

Fix:
Give every call more work (batch the inputs, bigger tiles of work), fuse the ops (torch.compile,
a fused kernel), or replay the whole step as a CUDA graph (`torch.compile(mode="reduce-overhead")`,
`torch.cuda.graphs`) so the host cost is paid once.
"""

from __future__ import annotations

from pista.findings import Context, Evidence, Finding, Severity, top_indices

ID = "overhead-bound"
TITLE = "Host overhead bound: the GPU waits for the CPU"
SEVERITY = Severity.CRITICAL
EVIDENCE_EVENTS = 5


def check(ctx: Context) -> list[Finding]:
    s = ctx.summary
    if s.verdict != "overhead-bound":
        return []
    facts = ctx.facts
    ratio = s.self_cpu_total_us / s.self_device_total_us if s.self_device_total_us else float("inf")
    busy = 100.0 * (s.gpu_busy_share or 0.0)
    times = f"{ratio:.0f}x" if ratio != float("inf") else "no measurable GPU time"
    picks = top_indices(facts.self_time, facts.is_host, EVIDENCE_EVENTS)
    evidence = [Evidence.of(facts, int(i), note="largest self CPU time") for i in picks]
    return [Finding(
        rule=ID,
        severity=SEVERITY,
        title=TITLE,
        message=(f"Self CPU total {s.self_cpu_total_us / 1000:.3f} ms vs Self CUDA total "
                 f"{s.self_device_total_us:.3f} µs ({times}); the GPU is busy {busy:.1f}% of the "
                 f"{s.window_us / 1000:.3f} ms window."),
        advice=("Do more work per call: batch inputs, fuse ops (torch.compile), or capture the step "
                "as a CUDA graph so launch and dispatch costs are paid once."),
        evidence=evidence,
        metrics={"cpu_to_device_ratio": ratio, "gpu_busy_percent": busy},
    )]
