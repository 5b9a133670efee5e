"""The built-in experiments of `pista run`: each builds its tensors/model once and returns one step.

| name | one step |
| --- | --- |
| matmul_add | `fn(x, w, b) = torch.add(torch.matmul(x, w), b)` on (batch, size) @ (size, size), in `record_function("matmul_add")` |
| linear | nn.Linear(size, size) on (batch, size): forward, MSE loss, backward, SGD step |
| mlp | 4 blocks Linear(size, 4 size)-GELU-Linear(4 size, size), forward + backward + AdamW |
| transformer | a small GPT (pre-norm blocks, causal SDPA, tied-free head) built in code, forward + backward + AdamW |

matmul_add and linear hold their tensors in the dtype itself (as the fixtures did); mlp and
transformer keep fp32 parameters and run under autocast when the dtype is 16-bit.
`compile=True` wraps the function (matmul_add) or the model in `torch.compile`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pista.capture import import_torch
from pista.errors import UsageError

NAMES = ("matmul_add", "linear", "mlp", "transformer")

# Defaults small enough to run anywhere, large enough to see the GPU work on an H200.
DEFAULT_SIZE = {"matmul_add": 1024, "linear": 1024, "mlp": 1024, "transformer": 256}
DEFAULT_BATCH = {"matmul_add": None, "linear": None, "mlp": 256, "transformer": 8}  # None: = size
MLP_BLOCKS = 4
GPT_LAYERS, GPT_HEAD_DIM, GPT_SEQ, GPT_VOCAB = 4, 64, 256, 8192

DTYPES = {"bf16": "bfloat16", "bfloat16": "bfloat16", "fp16": "float16", "float16": "float16",
          "half": "float16", "fp32": "float32", "float32": "float32", "float": "float32"}


@dataclass
class Workload:
    name: str
    step: Callable[[], Any]
    params: dict[str, Any] = field(default_factory=dict)


def resolve_dtype(dtype: str, device: str) -> str:
    """torch dtype name; 'auto' is bfloat16 on cuda, float32 on the CPU."""
    if dtype == "auto":
        return "bfloat16" if device == "cuda" else "float32"
    if dtype not in DTYPES:
        raise UsageError(f"--dtype {dtype}: choose one of auto, bf16, fp16, fp32")
    return DTYPES[dtype]


def build(name: str, *, size: int | None = None, batch: int | None = None, dtype: str = "auto",
          device: str = "cpu", compile: bool = False, seed: int = 0) -> Workload:
    """The workload `name`, ready to step; its tensors live on `device`."""
    if name not in NAMES:
        raise UsageError(f"unknown workload {name!r}; choose one of {', '.join(NAMES)}")
    torch = import_torch()
    _check_positive(size, batch)
    size = DEFAULT_SIZE[name] if size is None else size
    batch = batch if batch is not None else DEFAULT_BATCH[name] or size
    dtype_name = resolve_dtype(dtype, device)
    torch.manual_seed(seed)
    builder = {"matmul_add": _matmul_add, "linear": _linear, "mlp": _mlp, "transformer": _transformer}[name]
    step, extra = builder(torch, size, batch, getattr(torch, dtype_name), device, compile)
    params = {"size": size, "batch": batch, "dtype": dtype_name, "device": device, "compile": compile, **extra}
    return Workload(name, step, params)


def _check_positive(size: int | None, batch: int | None) -> None:
    """A usage error for a --size or --batch given below 1."""
    bad = [f"--{flag} {value}" for flag, value in (("size", size), ("batch", batch)) if value is not None and value < 1]
    if bad:  # 0 is not "the default": say so rather than run the default size
        raise UsageError(f"{' and '.join(bad)}: must be positive")


def _maybe_compile(torch: Any, fn: Any, compile: bool) -> Any:
    return torch.compile(fn) if compile else fn


def _matmul_add(torch: Any, size: int, batch: int, dtype: Any, device: str, compile: bool):
    # torch: the capture extra, imported only to capture
    from torch.profiler import record_function

    def fn(x, w, b):
        return torch.add(torch.matmul(x, w), b)

    x = torch.randn(batch, size, device=device, dtype=dtype)
    w = torch.randn(size, size, device=device, dtype=dtype)
    b = torch.randn(size, device=device, dtype=dtype)
    run = _maybe_compile(torch, fn, compile)

    def step():
        with record_function("matmul_add"):
            return run(x, w, b)

    return step, {"flops_per_step": 2 * batch * size * size}


def _train_step(torch: Any, model: Any, optimizer: Any, make_batch: Callable[[], tuple[Any, Any]],
                loss_fn: Callable[[Any, Any], Any], autocast_dtype: Any, device: str):
    # torch: the capture extra, imported only to capture
    from torch.profiler import record_function

    inputs, target = make_batch()

    def step():
        with record_function("train_step"):
            with torch.autocast(device_type=device, dtype=autocast_dtype, enabled=autocast_dtype is not None):
                loss = loss_fn(model(inputs), target)
            loss.backward()
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
        return loss

    return step


def _autocast_dtype(torch: Any, dtype: Any) -> Any:
    return None if dtype == torch.float32 else dtype


def _linear(torch: Any, size: int, batch: int, dtype: Any, device: str, compile: bool):
    model = torch.nn.Linear(size, size, device=device, dtype=dtype)
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
    x = torch.randn(batch, size, device=device, dtype=dtype)
    y = torch.randn(batch, size, device=device, dtype=dtype)
    run = _maybe_compile(torch, model, compile)
    step = _train_step(torch, run, optimizer, lambda: (x, y), torch.nn.functional.mse_loss, None, device)
    return step, {"flops_per_step": 6 * batch * size * size}


def _mlp(torch: Any, size: int, batch: int, dtype: Any, device: str, compile: bool):
    nn = torch.nn
    blocks = []
    for _ in range(MLP_BLOCKS):
        blocks += [nn.Linear(size, 4 * size), nn.GELU(), nn.Linear(4 * size, size)]
    model = nn.Sequential(*blocks).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    x = torch.randn(batch, size, device=device)
    y = torch.randn(batch, size, device=device)
    run = _maybe_compile(torch, model, compile)
    step = _train_step(torch, run, optimizer, lambda: (x, y), nn.functional.mse_loss,
                       _autocast_dtype(torch, dtype), device)
    return step, {"blocks": MLP_BLOCKS, "flops_per_step": 6 * MLP_BLOCKS * 8 * batch * size * size}


def _transformer(torch: Any, size: int, batch: int, dtype: Any, device: str, compile: bool):
    nn: Any  # torch.nn, imported at run time: declared so that mypy takes nn.Module as a base
    nn, F = torch.nn, torch.nn.functional
    heads = max(1, size // GPT_HEAD_DIM)
    if size % heads:
        raise UsageError(f"--size {size}: the transformer needs a width divisible by {heads} heads")
    seq = GPT_SEQ

    class Block(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm(size), nn.LayerNorm(size)
            self.qkv, self.proj = nn.Linear(size, 3 * size), nn.Linear(size, size)
            self.fc, self.out = nn.Linear(size, 4 * size), nn.Linear(4 * size, size)

        def forward(self, h):
            b, t, c = h.shape
            q, k, v = self.qkv(self.ln1(h)).view(b, t, 3, heads, c // heads).permute(2, 0, 3, 1, 4)
            a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            h = h + self.proj(a.transpose(1, 2).reshape(b, t, c))
            return h + self.out(F.gelu(self.fc(self.ln2(h))))

    class GPT(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.tok, self.pos = nn.Embedding(GPT_VOCAB, size), nn.Embedding(seq, size)
            self.blocks = nn.ModuleList(Block() for _ in range(GPT_LAYERS))
            self.ln, self.head = nn.LayerNorm(size), nn.Linear(size, GPT_VOCAB, bias=False)

        def forward(self, idx):
            h = self.tok(idx) + self.pos(torch.arange(idx.shape[1], device=idx.device))
            for block in self.blocks:
                h = block(h)
            return self.head(self.ln(h))

    model = GPT().to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)
    idx = torch.randint(0, GPT_VOCAB, (batch, seq), device=device)
    target = torch.randint(0, GPT_VOCAB, (batch, seq), device=device)

    def loss_fn(logits, tgt):
        return F.cross_entropy(logits.view(-1, GPT_VOCAB).float(), tgt.view(-1))

    run = _maybe_compile(torch, model, compile)
    step = _train_step(torch, run, optimizer, lambda: (idx, target), loss_fn, _autocast_dtype(torch, dtype), device)
    n_params = sum(p.numel() for p in model.parameters())
    return step, {"layers": GPT_LAYERS, "heads": heads, "seq": seq, "vocab": GPT_VOCAB, "params": n_params}
