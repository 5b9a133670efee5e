"""Capture the real traces the rule tests use (tests/fixtures/gpu/), each with the table torch printed.

Needs only torch (run where CUDA is, e.g. on the H200 device machine; `cpu_only` runs anywhere):

    python scripts/capture_fixtures.py OUTDIR [SCENARIO ...]

Every scenario: un-profiled warm-up calls, then torch.profiler with CPU (+CUDA) activities,
record_shapes=True, schedule(wait=1, warmup=1, active=3), one `prof.step()` per step, exported with
export_chrome_trace and gzipped; NAME.table.txt is key_averages().table(sort_by="cuda_time_total",
row_limit=25) (self_cpu_time_total for CPU-only).
"""

from __future__ import annotations

import gzip
import os
import shutil
import sys
import time
from collections.abc import Callable

import torch
from torch.profiler import ProfilerActivity, profile, record_function, schedule

STEPS = 5  # wait 1 + warmup 1 + active 3


def _capture(name: str, out: str, step: Callable[[], None], warmup: int = 3, cuda: bool = True,
             sync_each_step: bool = False) -> None:
    for _ in range(warmup):
        step()
    if cuda:
        torch.cuda.synchronize()
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    with profile(activities=activities, record_shapes=True,
                 schedule=schedule(wait=1, warmup=1, active=3, repeat=1)) as prof:
        for _ in range(STEPS):
            step()
            if sync_each_step and cuda:
                torch.cuda.synchronize()
            prof.step()
    raw = os.path.join(out, f"{name}.json")
    prof.export_chrome_trace(raw)
    with open(raw, "rb") as src, gzip.open(raw + ".gz", "wb", compresslevel=9) as dst:
        shutil.copyfileobj(src, dst)
    os.remove(raw)
    sort_by = "cuda_time_total" if cuda else "self_cpu_time_total"
    with open(os.path.join(out, f"{name}.table.txt"), "w") as fh:
        fh.write(prof.key_averages().table(sort_by=sort_by, row_limit=25))
    print(f"captured {name}", flush=True)


def host_sync_item(out: str) -> None:
    """A training-style loop that reads a scalar back with .item() after every matmul."""
    x = torch.randn(1024, 1024, device="cuda", dtype=torch.bfloat16)

    def step() -> None:
        with record_function("train_step"):
            total = 0.0
            for _ in range(8):
                y = x @ x
                total += y.float().mean().item()

    _capture("host_sync_item", out, step)


def pageable_memcpy(out: str) -> None:
    """The same 64 MiB host->device copy from pageable memory and from pinned memory."""
    pageable = torch.randn(16 * 1024 * 1024)
    pinned = torch.randn(16 * 1024 * 1024).pin_memory()
    back = torch.empty(16 * 1024 * 1024, device="cuda")

    def step() -> None:
        with record_function("pageable_copy"):
            a = pageable.to("cuda")
        with record_function("pinned_copy"):
            b = pinned.to("cuda", non_blocking=True)
        with record_function("device_to_host"):
            c = back.cpu()
        del a, b, c

    _capture("pageable_memcpy", out, step)


def recompile(out: str) -> None:
    """A compiled function called with a new shape every step, inside the profiled window."""

    def fn(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        return torch.relu(x @ w) + 1.0

    compiled = torch.compile(fn, dynamic=False)
    sizes = iter([64, 64, 64, 96, 128, 160, 192, 224, 256, 288])

    def step() -> None:
        n = next(sizes)
        x = torch.randn(n, n, device="cuda")
        w = torch.randn(n, n, device="cuda")
        with record_function("compiled_step"):
            compiled(x, w)

    _capture("recompile", out, step, warmup=1)


def _gemm(name: str, out: str, tf32: bool) -> None:
    torch.backends.cuda.matmul.allow_tf32 = tf32
    torch.set_float32_matmul_precision("high" if tf32 else "highest")
    x = torch.randn(4096, 4096, device="cuda")
    w = torch.randn(4096, 4096, device="cuda")

    def step() -> None:
        with record_function("fp32_matmul"):
            torch.matmul(x, w)

    _capture(name, out, step, sync_each_step=True)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")


def fp32_gemm(out: str) -> None:
    """A 4096^3 fp32 matmul with TF32 off: SIMT FMA, no tensor cores."""
    _gemm("fp32_gemm", out, tf32=False)


def tf32_gemm(out: str) -> None:
    """The same matmul with set_float32_matmul_precision('high'): TF32 tensor cores."""
    _gemm("tf32_gemm", out, tf32=True)


def launch_bound(out: str) -> None:
    """200 tiny elementwise ops per step on a 256-element tensor."""
    x = torch.randn(256, device="cuda")

    def step() -> None:
        nonlocal x
        with record_function("tiny_ops"):
            for _ in range(100):
                x = x * 1.0001
                x = x + 0.0001

    _capture("launch_bound", out, step)


def gpu_idle_dataloader(out: str) -> None:
    """Each step first builds its batch on the CPU (a `data_loading` region), then runs the model."""
    model = torch.nn.Sequential(torch.nn.Linear(2048, 4096), torch.nn.GELU(), torch.nn.Linear(4096, 2048))
    model = model.cuda().to(torch.bfloat16)

    def step() -> None:
        with record_function("data_loading"):
            batch = torch.randn(512, 2048)
            batch = (batch - batch.mean()) / batch.std()
            time.sleep(0.004)  # decoding / augmentation stand-in
            batch = batch.to(torch.bfloat16).to("cuda")
        with record_function("forward"):
            for _ in range(4):
                model(batch)

    _capture("gpu_idle_dataloader", out, step, sync_each_step=True)


def trailing_sync(out: str) -> None:
    """A benchmark-style loop: a few µs of launches, then torch.cuda.synchronize() at every step end."""
    x = torch.randn(64, 64, device="cuda", dtype=torch.bfloat16)

    def step() -> None:
        with record_function("matmul_add"):
            torch.add(torch.matmul(x, x), x)
        with record_function("sync"):
            torch.cuda.synchronize()

    _capture("trailing_sync", out, step)


def cpu_only(out: str) -> None:
    """A small MLP forward+backward on the CPU: no CUDA activity at all."""
    model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(), torch.nn.Linear(512, 256))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(64, 256)

    def step() -> None:
        with record_function("train_step"):
            opt.zero_grad()
            model(x).sum().backward()
            opt.step()

    _capture("cpu_only", out, step, cuda=False)


SCENARIOS = {f.__name__: f for f in (host_sync_item, pageable_memcpy, recompile, fp32_gemm, tf32_gemm,
                                      launch_bound, gpu_idle_dataloader, trailing_sync, cpu_only)}


def main() -> None:
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    names = sys.argv[2:] or list(SCENARIOS)
    print(f"torch {torch.__version__}, cuda {torch.version.cuda}, "
          f"device {torch.cuda.get_device_name() if torch.cuda.is_available() else 'none'}", flush=True)
    for name in names:
        try:
            SCENARIOS[name](out)
        except Exception as err:  # one scenario failing must not lose the others
            print(f"FAILED {name}: {type(err).__name__}: {err}", flush=True)


if __name__ == "__main__":
    main()
