"""Capture real multi-rank CPU traces with torch.distributed's gloo backend (tests/fixtures/gloo/).

    python scripts/capture_gloo.py OUTDIR [--world-size 2] [--slow-rank R --slow-ms MS] [--steps 5]

Each rank is a process started by torch.multiprocessing (MASTER_ADDR=127.0.0.1, a free port),
trains a tiny MLP wrapped in DistributedDataParallel on the CPU, and profiles it with
torch.profiler (CPU activity, schedule wait=1, warmup=1, active=5, one `prof.step()` per step).
DDP's gradient all-reduces run on gloo while backward goes on, so the trace shows both the
overlapped part and the part the main thread waits for. With `--slow-rank R`, rank R sleeps
`--slow-ms` inside every step before its forward pass (in a `record_function("slow_input")`
region): the other ranks then wait in the all-reduce for it, which is what a straggler looks like.
Every rank writes OUTDIR/rank-N.json.gz (torch puts `distributedInfo` with the rank in the file).

`--backend nccl` runs the same job on GPUs (rank N on cuda:N, CPU and CUDA activities): NCCL
needs one GPU per rank, so on a one-GPU machine only `--world-size 1` runs (a real NCCL trace, but
with nothing to wait for).
"""

from __future__ import annotations

import argparse
import gzip
import os
import shutil
import socket
import time

WAIT, WARMUP, ACTIVE = 1, 1, 5


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _worker(rank: int, world_size: int, port: int, args: argparse.Namespace) -> None:
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel
    from torch.profiler import ProfilerActivity, profile, record_function, schedule

    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    torch.set_num_threads(1)  # two cores shared by all ranks: keep each rank to one
    device = torch.device("cpu")
    activities = [ProfilerActivity.CPU]
    if args.backend == "nccl":
        device = torch.device("cuda", rank)
        torch.cuda.set_device(device)
        activities.append(ProfilerActivity.CUDA)
    dist.init_process_group(args.backend, rank=rank, world_size=world_size)
    torch.manual_seed(0)
    layers = []
    for _ in range(args.layers):
        layers += [torch.nn.Linear(args.width, args.width), torch.nn.ReLU()]
    model = DistributedDataParallel(torch.nn.Sequential(*layers).to(device), bucket_cap_mb=args.bucket_mb)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(args.batch, args.width, device=device)

    def step() -> None:
        if rank == args.slow_rank:
            with record_function("slow_input"):
                time.sleep(args.slow_ms / 1000.0)
        opt.zero_grad(set_to_none=True)
        loss = model(x).square().mean()
        loss.backward()  # DDP all-reduces the gradient buckets as they become ready
        opt.step()

    for _ in range(2):  # warm-up outside the profiler: gloo connections, DDP's first-iteration setup
        step()
    dist.barrier()
    with profile(activities=activities,
                 schedule=schedule(wait=WAIT, warmup=WARMUP, active=ACTIVE, repeat=1)) as prof:
        for _ in range(WAIT + WARMUP + ACTIVE):
            step()
            prof.step()
    raw = os.path.join(args.out, f"rank-{rank}.json")
    prof.export_chrome_trace(raw)
    with open(raw, "rb") as src, gzip.open(raw + ".gz", "wb", compresslevel=9) as dst:
        shutil.copyfileobj(src, dst)
    os.remove(raw)
    dist.barrier()
    dist.destroy_process_group()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out")
    parser.add_argument("--world-size", type=int, default=2)
    parser.add_argument("--backend", choices=("gloo", "nccl"), default="gloo")
    parser.add_argument("--slow-rank", type=int, default=-1, help="this rank sleeps before each step")
    parser.add_argument("--slow-ms", type=float, default=30.0)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--width", type=int, default=256)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--bucket-mb", type=float, default=0.25, help="DDP bucket size: small, so buckets overlap backward")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)

    import torch.multiprocessing as mp

    mp.spawn(_worker, args=(args.world_size, _free_port(), args), nprocs=args.world_size, join=True)
    print(f"captured {args.world_size} ranks into {args.out}")


if __name__ == "__main__":
    main()
