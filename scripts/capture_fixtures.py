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
             sync_each_step: bool = False, with_stack: bool = False, profile_memory: bool = False,
             grouped: bool = False) -> None:
    for _ in range(warmup):
        step()
    if cuda:
        torch.cuda.synchronize()
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    # ops carry their Python stack in key_averages (group_by_stack_n) only with verbose=True
    extra = {"experimental_config": torch._C._profiler._ExperimentalConfig(verbose=True)} if grouped and with_stack else {}
    with profile(activities=activities, record_shapes=True, with_stack=with_stack, profile_memory=profile_memory,
                 schedule=schedule(wait=1, warmup=1, active=3, repeat=1), **extra) as prof:
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
    if grouped:  # the tables `pista table --group-by-input-shape / --group-by-stack 5` rebuild
        with open(os.path.join(out, f"{name}.shapes.table.txt"), "w") as fh:
            fh.write(prof.key_averages(group_by_input_shape=True).table(sort_by=sort_by, row_limit=25))
        if with_stack:
            with open(os.path.join(out, f"{name}.stack.table.txt"), "w") as fh:
                fh.write(prof.key_averages(group_by_stack_n=5).table(sort_by=sort_by, row_limit=25))
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


def _mlp_block(x: torch.Tensor, model: torch.nn.Module) -> torch.Tensor:
    return model(x)


def _two_mlps(device: str) -> Callable[[], None]:
    """Two small MLPs of different widths (so ops have several input shapes), AdamW(foreach=True)."""
    wide = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.GELU(), torch.nn.Linear(512, 256)).to(device)
    narrow = torch.nn.Sequential(torch.nn.Linear(256, 128), torch.nn.GELU(), torch.nn.Linear(128, 256)).to(device)
    opt = torch.optim.AdamW([*wide.parameters(), *narrow.parameters()], lr=1e-3, foreach=True)
    x = torch.randn(64, 256, device=device)

    def step() -> None:
        with record_function("train_step"):
            loss = _mlp_block(x, wide).square().mean() + _mlp_block(x, narrow).square().mean()
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)

    return step


def cpu_grouped(out: str) -> None:
    """A small CPU MLP of two widths (so ops have several input shapes) with AdamW(foreach=True):
    also printed grouped by input shape. (Without stacks: torch 2.13 lists python_function frames as
    rows and gives ops no stack, so its group_by_stack_n groups nothing; gpu_grouped has them.)"""
    _capture("cpu_grouped", out, _two_mlps("cpu"), cuda=False, grouped=True)


def _cpu_adamw(name: str, out: str, fused: bool) -> None:
    model = torch.nn.Sequential(*[m for _ in range(2) for m in (torch.nn.Linear(512, 2048), torch.nn.GELU(),
                                                                torch.nn.Linear(2048, 512))])
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=fused, foreach=False if not fused else None)
    x = torch.randn(32, 512)

    def step() -> None:
        with record_function("train_step"):
            model(x).square().mean().backward()
            opt.step()
            opt.zero_grad(set_to_none=True)

    _capture(name, out, step, cuda=False)


def cpu_adamw_loop(out: str) -> None:
    """A small CPU MLP (2x Linear 512-2048-512, batch 32) with AdamW's CPU default, a loop over the
    parameters (foreach=False): the optimizer is most of the step."""
    _cpu_adamw("cpu_adamw_loop", out, fused=False)


def cpu_adamw_fused(out: str) -> None:
    """The same step with AdamW(fused=True): the healthy twin."""
    _cpu_adamw("cpu_adamw_fused", out, fused=True)


def gpu_grouped(out: str) -> None:
    """cpu_grouped's two MLPs on the GPU, with_stack=True: printed grouped by input shape and by 5
    stack frames too."""
    _capture("gpu_grouped", out, _two_mlps("cuda"), with_stack=True, grouped=True)


def host_sync_item_stack(out: str) -> None:
    """host_sync_item recorded with with_stack=True and profile_memory=True (python_function events,
    [memory] instant events)."""
    x = torch.randn(1024, 1024, device="cuda", dtype=torch.bfloat16)

    def read_loss(y: torch.Tensor) -> float:
        return y.float().mean().item()

    def step() -> None:
        with record_function("train_step"):
            total = 0.0
            for _ in range(8):
                total += read_loss(x @ x)

    _capture("host_sync_item_stack", out, step, with_stack=True, profile_memory=True)


def fp64_gemm(out: str) -> None:
    """A 4096^3 fp64 matmul: fp64 tensor cores, ~15x slower than bf16."""
    x = torch.randn(4096, 4096, device="cuda", dtype=torch.float64)
    w = torch.randn(4096, 4096, device="cuda", dtype=torch.float64)

    def step() -> None:
        with record_function("fp64_matmul"):
            torch.matmul(x, w)

    _capture("fp64_gemm", out, step, sync_each_step=True)


def _mlp_train(name: str, out: str, fused: bool, dtype: torch.dtype = torch.float32) -> None:
    layers = []
    for _ in range(4):
        layers += [torch.nn.Linear(1024, 4096), torch.nn.GELU(), torch.nn.Linear(4096, 1024)]
    model = torch.nn.Sequential(*layers).cuda().to(dtype)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=fused, foreach=None if fused else True)
    x = torch.randn(256, 1024, device="cuda", dtype=dtype)

    def step() -> None:
        with record_function("forward"):
            loss = model(x).square().mean()
        with record_function("backward"):
            loss.backward()
        with record_function("optimizer"):
            opt.step()
            opt.zero_grad(set_to_none=True)

    _capture(name, out, step)


def adamw_foreach(out: str) -> None:
    """An fp32 MLP (4x Linear 1024-4096-1024) training step with AdamW(foreach=True)."""
    _mlp_train("adamw_foreach", out, fused=False)


def adamw_fused(out: str) -> None:
    """The same step with AdamW(fused=True)."""
    _mlp_train("adamw_fused", out, fused=True)


def adamw_foreach_bf16(out: str) -> None:
    """The MLP step in bf16 (params and inputs; GEMMs on the tensor cores), AdamW(foreach=True): the
    optimizer is the one planted problem."""
    _mlp_train("adamw_foreach_bf16", out, fused=False, dtype=torch.bfloat16)


def adamw_fused_bf16(out: str) -> None:
    """The same bf16 step with AdamW(fused=True): the healthy twin."""
    _mlp_train("adamw_fused_bf16", out, fused=True, dtype=torch.bfloat16)


def _bias(name: str, out: str, fused: bool) -> None:
    x = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(4096, device="cuda", dtype=torch.bfloat16)

    def step() -> None:
        with record_function("linear"):
            if fused:
                torch.addmm(b, x, w)
            else:
                torch.add(torch.matmul(x, w), b)

    _capture(name, out, step)


def bias_unfused(out: str) -> None:
    """torch.add(torch.matmul(x, w), b) at 4096 bf16 (the seed): the bias is a separate kernel."""
    _bias("bias_unfused", out, fused=False)


def bias_addmm(out: str) -> None:
    """torch.addmm(b, x, w) at 4096 bf16: the bias in the GEMM's epilogue."""
    _bias("bias_addmm", out, fused=True)


def _chain(x: torch.Tensor) -> torch.Tensor:
    y = x * 2.0
    y = y + 1.0
    y = torch.relu(y)
    y = y * x
    y = torch.sigmoid(y)
    return y - 0.5


def elementwise_chain(out: str) -> None:
    """Six elementwise ops in a row on a 64 Mi-element fp32 tensor, eager: six passes over memory."""
    x = torch.randn(64 * 1024 * 1024, device="cuda")

    def step() -> None:
        with record_function("chain"):
            _chain(x)

    _capture("elementwise_chain", out, step)


def elementwise_compiled(out: str) -> None:
    """The same chain under torch.compile: one fused kernel."""
    x = torch.randn(64 * 1024 * 1024, device="cuda")
    fn = torch.compile(_chain)

    def step() -> None:
        with record_function("chain"):
            fn(x)

    _capture("elementwise_compiled", out, step)


def stream_fp32(out: str) -> None:
    """x * 2.0 on a 256 Mi-element fp32 tensor: a pure streaming kernel (bandwidth)."""
    x = torch.randn(256 * 1024 * 1024, device="cuda")

    def step() -> None:
        with record_function("scale"):
            x.mul(2.0)

    _capture("stream_fp32", out, step)


def allocator_churn(out: str) -> None:
    """torch.cuda.empty_cache() every step: each step's tensors come from fresh cudaMalloc calls."""
    w = torch.randn(2048, 2048, device="cuda", dtype=torch.bfloat16)

    def step() -> None:
        with record_function("step"):
            for _ in range(4):
                h = torch.randn(4096, 2048, device="cuda", dtype=torch.bfloat16)
                (h @ w).relu_()
                del h
            torch.cuda.empty_cache()

    _capture("allocator_churn", out, step)


def _gpt(bf16_params: bool, fused: bool):
    import torch.nn.functional as F
    from torch import nn

    d, heads, n_layer, seq, vocab, batch = 1024, 16, 6, 1024, 8192, 8

    class Block(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
            self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
            self.fc, self.out = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

        def forward(self, h):
            b, t, _ = h.shape
            q, k, v = self.qkv(self.ln1(h)).view(b, t, 3, heads, d // heads).permute(2, 0, 3, 1, 4)
            a = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(b, t, d)
            h = h + self.proj(a)
            return h + self.out(F.gelu(self.fc(self.ln2(h))))

    model = nn.Sequential(nn.Embedding(vocab, d), *[Block() for _ in range(n_layer)], nn.LayerNorm(d),
                          nn.Linear(d, vocab)).cuda()
    if bf16_params:
        model = model.to(torch.bfloat16)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=fused, foreach=None if fused else True)
    idx = torch.randint(0, vocab, (batch, seq), device="cuda")

    def step() -> None:
        with record_function("forward"), torch.autocast("cuda", dtype=torch.bfloat16, enabled=not bf16_params):
            logits = model(idx)
            loss = F.cross_entropy(logits.view(-1, vocab).float(), idx.view(-1))
        with record_function("backward"):
            loss.backward()
        with record_function("optimizer"):
            opt.step()
            opt.zero_grad(set_to_none=True)

    return step


def gpt_bf16_fused(out: str) -> None:
    """A GPT (6 layers, d=1024, seq 1024, batch 8) training step in bf16 params, AdamW(fused=True):
    the healthy case."""
    _capture("gpt_bf16_fused", out, _gpt(bf16_params=True, fused=True))


def gpt_autocast(out: str) -> None:
    """The same GPT with fp32 params under torch.autocast(bf16) and AdamW(foreach=True): cast kernels
    of the same weights every step."""
    _capture("gpt_autocast", out, _gpt(bf16_params=False, fused=False))


def resnet50_bf16(out: str) -> None:
    """A ResNet-50 (bottleneck 3-4-6-3) training step, bf16 params, channels_last, batch 128 at 224²,
    SGD(fused=True): the healthy conv case."""
    from torch import nn

    class Bottleneck(nn.Module):
        def __init__(self, cin: int, width: int, stride: int) -> None:
            super().__init__()
            cout = width * 4
            self.body = nn.Sequential(
                nn.Conv2d(cin, width, 1, bias=False), nn.BatchNorm2d(width), nn.ReLU(inplace=True),
                nn.Conv2d(width, width, 3, stride, 1, bias=False), nn.BatchNorm2d(width), nn.ReLU(inplace=True),
                nn.Conv2d(width, cout, 1, bias=False), nn.BatchNorm2d(cout))
            self.down = (nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))
                         if stride != 1 or cin != cout else nn.Identity())

        def forward(self, x):
            return torch.relu(self.body(x) + self.down(x))

    layers: list[nn.Module] = [nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU(inplace=True),
                               nn.MaxPool2d(3, 2, 1)]
    cin = 64
    for width, blocks, stride in ((64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)):
        for i in range(blocks):
            layers.append(Bottleneck(cin, width, stride if i == 0 else 1))
            cin = width * 4
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(cin, 1000)]
    model = nn.Sequential(*layers).cuda().to(torch.bfloat16).to(memory_format=torch.channels_last)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, fused=True)
    x = torch.randn(128, 3, 224, 224, device="cuda", dtype=torch.bfloat16).to(memory_format=torch.channels_last)
    y = torch.randint(0, 1000, (128,), device="cuda")

    def step() -> None:
        with record_function("forward"):
            loss = torch.nn.functional.cross_entropy(model(x).float(), y)
        with record_function("backward"):
            loss.backward()
        with record_function("optimizer"):
            opt.step()
            opt.zero_grad(set_to_none=True)

    _capture("resnet50_bf16", out, step)


def memory_leak(out: str) -> None:
    """A training step that keeps every step's loss with its graph (`losses.append(loss)`): the
    activations of each step stay allocated, so memory grows step after step (profile_memory=True)."""
    model = torch.nn.Sequential(torch.nn.Linear(2048, 8192), torch.nn.GELU(), torch.nn.Linear(8192, 2048)).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    x = torch.randn(1024, 2048, device="cuda")
    losses = []

    def step() -> None:
        with record_function("train_step"):
            loss = model(x).square().mean()
            loss.backward(retain_graph=True)
            opt.step()
            opt.zero_grad(set_to_none=True)
            losses.append(loss)  # the bug: keeps the graph and its activations alive

    _capture("memory_leak", out, step, profile_memory=True)


def memory_steady(out: str) -> None:
    """The same step keeping `loss.detach()` instead: memory stays flat."""
    model = torch.nn.Sequential(torch.nn.Linear(2048, 8192), torch.nn.GELU(), torch.nn.Linear(8192, 2048)).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    x = torch.randn(1024, 2048, device="cuda")
    losses = []

    def step() -> None:
        with record_function("train_step"):
            loss = model(x).square().mean()
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
            losses.append(loss.detach())

    _capture("memory_steady", out, step, profile_memory=True)


def tensorboard_cycles(out: str) -> None:
    """tensorboard_trace_handler with schedule(wait=1, warmup=1, active=2, repeat=2): one file per
    cycle in OUT/tensorboard_cycles/ (HOST_PID.TIMESTAMP.pt.trace.json)."""
    from torch.profiler import tensorboard_trace_handler

    folder = os.path.join(out, "tensorboard_cycles")
    x = torch.randn(2048, 2048, device="cuda", dtype=torch.bfloat16)
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], record_shapes=True,
                 schedule=schedule(wait=1, warmup=1, active=2, repeat=2),
                 on_trace_ready=tensorboard_trace_handler(folder, use_gzip=True)) as prof:
        for _ in range(8):
            with record_function("matmul"):
                (x @ x).relu_()
            prof.step()
    print("captured tensorboard_cycles", flush=True)


def python_loop(out: str) -> None:
    """A per-sample Python loop: 128 separate (64x1024 @ 1024x1024) bf16 matmuls per step where one
    batched matmul would do; each kernel runs a few µs, each call costs the host more to dispatch."""
    x = torch.randn(128, 64, 1024, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(1024, 1024, device="cuda", dtype=torch.bfloat16)

    def step() -> None:
        with record_function("per_sample"):
            for i in range(x.shape[0]):
                torch.matmul(x[i], w)

    _capture("python_loop", out, step)


def python_loop_cpu(out: str) -> None:
    """The per-sample loop on the CPU (no CUDA): 128 separate (16x256 @ 256x256) fp32 matmuls per step
    where one batched matmul would do."""
    x = torch.randn(128, 16, 256)
    w = torch.randn(256, 256)

    def step() -> None:
        with record_function("per_sample"):
            for i in range(x.shape[0]):
                torch.matmul(x[i], w)

    _capture("python_loop_cpu", out, step, cuda=False)


SCENARIOS = {f.__name__: f for f in (host_sync_item, cpu_grouped, gpu_grouped, cpu_adamw_loop, cpu_adamw_fused, pageable_memcpy, recompile, fp32_gemm, tf32_gemm,
                                      launch_bound, gpu_idle_dataloader, trailing_sync, cpu_only,
                                      host_sync_item_stack, fp64_gemm, adamw_foreach, adamw_fused, bias_unfused,
                                      bias_addmm, elementwise_chain, elementwise_compiled, stream_fp32,
                                      allocator_churn, gpt_bf16_fused, gpt_autocast, resnet50_bf16, memory_leak,
                                      memory_steady, tensorboard_cycles, adamw_foreach_bf16, adamw_fused_bf16,
                                      python_loop, python_loop_cpu)}


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
