## overhead-bound: the text of its findings, in English
title = Host overhead bound: the GPU waits while the host dispatches ops

# message, advice, fix, basis, one message per note class: by hand (src/pista/i18n/README.md)

docs =
    What:
    The host spends far longer issuing work than the GPU spends doing it: Self CPU total is many
    times Self CUDA total and the GPU sits idle most of the window (the verdict). The finding is the
    part of that idle that is per-op overhead: the GPU waiting while the host runs Python between ops,
    dispatches ops and launches their kernels. It says where (the ops the GPU waited under, Python
    between ops, compiled code), whether the verdict sits near its threshold, and how much of it
    could be the profiler's own cost.

    Why:
    Each op pays a fixed toll in Python, the dispatcher and the CUDA launch path, tens of µs. When a
    kernel runs for 2 µs, that toll is the runtime: a faster GPU, or a faster kernel, changes nothing.
    Not every idle GPU is this toll: a data loader, a sync, a compile or the profiler's buffers leave
    the GPU idle too, and have other fixes; those are other findings' (gpu-idle, host-sync,
    recompilation, cold-start, profiler-overhead...), and the idle they claim is left out here.

    Example:
    `torch.add(torch.matmul(x, w), b)` at 64x64 in bf16 on an H200 (seed_mm64_warm): 510 µs of Self
    CPU for 12 µs of Self CUDA over 3 steps (43x); the GPU is busy 2% of the window and idle the whole
    126 µs median step while the host dispatches aten::mm and aten::add. series_mlp_eager (MLP, AdamW
    foreach, eager): 5.9 ms of the 6.9 ms step (86%). gpu/gpu_idle_dataloader is overhead-bound by
    the verdict too, but 13.4 ms of its 14.9 ms of idle per step is under `data_loading` (gpu-idle's)
    and 0.8 ms after its syncs: only 0.7 ms (4.7%) is per-op.

    Impact:
    Per step: the GPU idle (no kernel, copy or memset on the busiest device) inside the steps, minus,
    by interval arithmetic, the idle a more specific finding claims, so each ns is reported once:
    after a sync or a device-to-host copy until the next device work (host-sync, trailing-sync,
    pageable-memcpy), while torch.compile compiles (recompilation), in the profiler's buffer requests
    (profiler-overhead), in one-time set-up in a first call (cold-start, dead-window, lazy-loading),
    under a region that launches almost nothing (gpu-idle), just before tiny kernels (launch-bound),
    under very repeated calls (many-calls), and whatever another rule declares with a
    `claimed_idle(facts)` function. What is left is what CUDA graphs or fusing would save at most
    (upper bound). On gpu/host_sync_item that leaves 501 µs of the 847 µs of idle per step (55%)
    against host-sync's 355 µs: the syncs cost little while the host is this slow (measured unprofiled
    on the H200: 505 µs per step as captured, 330-610 µs across runs without its 8 syncs, the host
    still the limit, and 172 µs with the loop also captured as a CUDA graph), but they must go before a
    graph can capture the loop, and the fix says so. Before, the finding was always critical with no impact, even where the idle was a
    data loader's.

    Every span the one-time rules' findings own is left out (lazy-loading's first calls in a window
    without steps were "per-op overhead" before, with torch.compile advice), and the text names only the
    one-time rules that reported; one-time idle no printed finding owns is said as one-time set-up
    (issue 35: seed_mm4096_compile_cold pointed 1.17 ms at cold-start, dead-window and lazy-loading,
    none printed). A step that already replays CUDA graphs is not told to capture one: mostly graphed,
    its idle is the host's work around the replays. Per-step figures are shares of the mean step
    (seed_mm64_cold: 46.1 ms of idle per step against a 368 µs median step before).

    Fix:
    Fitted to where the idle is: Python between eager ops and their dispatch -> torch.compile (fuses
    ops, cuts dispatch) or a CUDA graph of the whole step (`torch.compile(mode="reduce-overhead")`,
    `torch.cuda.CUDAGraph`); code that is already compiled -> the CUDA graph, or more work per call
    (a bigger batch), never another torch.compile; syncs inside the step -> remove them first (see
    host-sync), since a graph cannot capture across a `.item()`; the idle under a foreach optimizer
    step is unfused-optimizer's (`fused=True`), listed with the other findings' claims. The profiler
    itself inflates host time, about 2x on op-dense loops (gpu/host_sync_item: 1003 µs a step profiled, 1138 with
    record_shapes, 505 unprofiled; gpt2_conv1d, with_stack and record_shapes, 74.9 ms profiled against
    ~29 ms unprofiled), so the message says what would stay idle with half the host time gone, and a
    verdict near its threshold should be checked against an unprofiled timing of the step.

ratio-text = { $has_ratio ->
    [yes] { $ratio }x
   *[no] no measurable GPU time
  }
share-text = { $share } of the { $whole_us } { $whole ->
    [step] mean step
   *[window] window
  }
between-item = { $us } with the host in no op (Python between ops{ $engine ->
        [yes] ; { $engine_us } of it around the backward, while the autograd engine starts or finishes, which the
            profiler inflates
       *[no] {""}
    })
compiled-item = { $us } inside compiled code
top-item = { $name } ({ $calls } per step, { $us })
claim-name = { $claim ->
    [sync_us] after syncs
    [data_us] under regions that launch almost nothing
    [cold_us] in one-time set-up
    [compile_us] while compiling
    [profiler_us] in the profiler's buffer requests
    [setup_us] while cuDNN sets up new shapes
    [launch_us] before tiny kernels
   *[calls_us] under very repeated calls
  }
left-item = { $claim ->
    [others] { $us } claimed by { $rules }
   *[other] { $us } { claim-name } ({ $rules })
  }
unowned-item = { $us } { $claim ->
    [sync_us] waiting after syncs
    [data_us] under regions that launch almost nothing
    [cold_us] one-time set-up (first calls: CUDA's context, libraries and kernel loading)
    [compile_us] compiling
    [profiler_us] the profiler's own buffer requests
    [setup_us] cuDNN setting up new shapes
    [launch_us] before tiny kernels
   *[calls_us] under very repeated calls
  }
message = { "Self CPU total" } { $self_cpu_us } vs { "Self CUDA total" } { $self_cuda_us } ({ ratio-text }); the GPU is
    busy { $busy }% of the { $window_us } window. Of its { $idle_us } of idle per step, { $per_op_us } ({ share-text })
    is per-op overhead, the GPU waiting while the host dispatches ops{ $has_parts ->
        [yes] : { $parts }
       *[no] {""}
    }.{ $has_top ->
        [yes] {" "}The GPU waits most under { $top_ops }.
       *[no] {""}
    }{ $has_left ->
        [yes] {" "}Left to other findings, per step: { $left }.
       *[no] {""}
    }{ $has_unowned ->
        [yes] {" "}Not per-op overhead either, per step: { $unowned }.
       *[no] {""}
    }{ $near_threshold ->
        [yes] {" "}The verdict sits near its threshold ({ ratio-text } against { $ratio_threshold }x, GPU busy
            { $busy_round }% against at most { $busy_threshold }%).
       *[no] {""}
    }{" "}The profiler about doubles the host time of loops like this{ $options ->
        [both] {" "}(and record_shapes and with_stack add more)
        [record_shapes] {" "}(and record_shapes add more)
        [with_stack] {" "}(and with_stack add more)
       *[none] {""}
    }: { $unprofiled_small ->
        [yes] this idle could be the profiler's own cost; time the step unprofiled before acting on it.
       *[no] with half of the host time taken off, about { $unprofiled_us } per step would still be idle.
    }
static-first = { $new_shapes ->
    [yes] {" "}The shapes change every step ({ $new_shape_op }: { $new_shape_calls } calls per step on a shape no
        other step in the window has): a CUDA graph replays fixed shapes, so make them static first (a preallocated
        static KV cache where a sequence grows, padded or bucketed lengths), or torch.compile recompiles and records
        a graph per shape.
   *[no] {""}
  }
advice-where = { $where ->
    [compiled] The host time is in code that is already compiled: another torch.compile will not help. Replay it as
        a CUDA graph (torch.compile(mode='reduce-overhead')) or give each call more work (a bigger batch) so its
        fixed cost is shared.
    [partly-compiled] Part of the step already runs compiled: compile the rest with it (the loss, the backward's
        eager ops, the optimizer step) so one graph holds the step, then replay it as a CUDA graph
        (torch.compile(mode='reduce-overhead')); another torch.compile of the compiled part will not help.
    [python] Most of it is Python between ops: torch.compile the step (it traces the Python away and fuses the ops)
        or capture the step as a CUDA graph (torch.cuda.CUDAGraph, torch.compile(mode='reduce-overhead')).
   *[dispatch] Most of it is the ops' own dispatch and launches: fuse them with torch.compile, capture the step as
        a CUDA graph (torch.compile(mode='reduce-overhead'), torch.cuda.CUDAGraph), or give each call more work
        (batch the inputs).
  }
advice = { $graphed ->
    [mostly] The step already replays CUDA graphs ({ $graph_launches } graph launch(es) per step, most of its
        kernels): the GPU waits for the host's work around the replays (its Python, sampling, scheduling, input
        preparation), not for launches. Overlap that work with the replay (prepare the next step while the graph
        runs) or give each replay more work (a bigger batch); another CUDA graph or torch.compile will not
        help.{ static-first }
    [partly] Part of the step already replays CUDA graphs ({ $graph_launches } graph launch(es) per step): capture
        the ops launched outside them into those graphs, or fuse them with torch.compile.{ static-first }
   *[none] { $syncs_at_end ->
            [yes] The { $end_syncs } { $sync_op } sync(s) per step come after the step's last kernel (its result
                read back): capture what comes before them as a CUDA graph, and read the result after the
                replay.{" "}
           *[no] {""}
        }{ $syncs_at_start ->
            [yes] The { $start_syncs } { $sync_op } sync(s) per step come before the step's first kernel (its
                input's upload): they stay outside a CUDA graph of what follows, which reads the input from a static
                buffer.{" "}
           *[no] {""}
        }{ $syncs_first ->
            [yes] First remove the { $mid_syncs } sync(s) per step inside ops{ $has_see ->
                    [yes] {" "}(see { $see })
                   *[no] {""}
                }: a CUDA graph cannot capture a sync (.item(), .cpu(), torch.cuda.synchronize()) and torch.compile
                breaks its graph at one.{" "}
           *[no] {""}
        }{ advice-where }{ static-first }{ $caution ->
            [yes] {" "}Before acting, time the step without the profiler: it inflates exactly this host time.
           *[no] {""}
        }
  }
fix = the GPU waits { $per_op_us } per step ({ share-text }) while the host dispatches ops ({ $has_top ->
        [yes] { $top }
       *[no] the ops
    }){ $fix_case ->
        [graphed-mostly] {" "}around its CUDA graph replays: overlap that host work with the replay, or batch more
            per replay
        [graphed-partly] {" "}outside the CUDA graphs it replays: capture those ops into the graphs, or fuse them
        [syncs-first] : remove the { $mid_syncs } { $sync_op } sync(s) per step, then capture the step as a CUDA
            graph
        [syncs-at-end] : capture the step up to its { $sync_op } as a CUDA graph (the read-back stays outside) or
            torch.compile it
        [compiled] {" "}in compiled code: use torch.compile(mode='reduce-overhead') (CUDA graphs) or a bigger batch
        [partly-compiled] , partly outside the compiled code: compile the whole step, then replay it as a CUDA graph
       *[other] : torch.compile the step or capture it as a CUDA graph
    }
basis = GPU idle inside the steps while the host dispatches ops, per step, without the idle other findings claim
    (after syncs, under data or set-up regions, compiling, the profiler's buffers, before tiny kernels, under
    repeated calls); upper bound
gpu-waited-under = GPU idle { $idle_us } under this call; { $idle_us_per_step } per step under all calls of this op
between-ops = GPU idle { $idle_us } with the host in no op ({ $engine ->
        [yes] around the backward, the autograd engine starting or finishing)
       *[no] Python between ops)
    }
