## unfused-optimizer: the text of its findings, in English
title = The optimizer step runs unfused (foreach or per parameter)

# message, advice, fix, basis, one message per note class: by hand (src/pista/i18n/README.md)

docs =
    What:
    The optimizer step runs unfused, as `foreach` kernels (`aten::_foreach_mul_`, `_foreach_lerp_`,
    `_foreach_addcdiv_`... under `Optimizer.step#AdamW.step`, each a `multi_tensor_apply_kernel` pass
    over all parameters) or one small kernel per parameter and operation, and that work is a large
    share of the GPU time or of the host's step. The optimizer's GPU work is the device work launched
    under `Optimizer.step#<Class>.step` (`pista.purpose`: purpose "optimizer"); its host time is that
    event's span. Without an `Optimizer.step`, a hand-written update counts too: a Python loop over the
    parameters that applies in-place ops (`buf.mul_(m).add_(p.grad); p.data.add_(buf, alpha=-lr)`) after
    each step's last autograd node, at least MIN_UPDATE_OPS of them every step (savings/h100/optim_manual_sgd:
    294 a step for 98 parameters; fused SGD saved 27% unprofiled, 21.7% predicted).

    Why:
    AdamW reads and writes each parameter, its gradient and two moments. The foreach implementation
    makes one pass over memory per elementwise operation (eight in gpu/adamw_foreach: mul, lerp,
    addcmul, sqrt, div, addcdiv...), the fused one (`fused=True`, one `_fused_adamw_` kernel) makes a
    single pass; on the host, foreach also dispatches a dozen ops plus per-parameter bookkeeping
    (`aten::item` on the step counters) where fused dispatches two.

    Example:
    series_mlp_eager on an H200 (4 blocks of Linear 1024-4096-1024, AdamW foreach): 48 foreach kernels
    in 3 steps take 2.233 ms, 62.6% of the GPU time, and `Optimizer.step#AdamW.step` 1.4 ms of the
    6.9 ms step. gpu/adamw_foreach and gpu/adamw_fused run the same fp32 MLP both ways: the optimizer's
    kernels take 747 µs per step foreach and 266 µs fused, its host span 761 µs and 267 µs. Unprofiled,
    the bf16-autocast MLP step goes from 6.1 ms (foreach) to 3.4 ms with `fused=True` (REVIEW.md);
    re-measured on the H200 for this rule (same MLP, fp32 parameters under autocast, 40 steps, two
    runs): 3.16-3.63 ms foreach and 3.03-3.21 ms fused, `opt.step()` on the host 0.70-0.77 ms and
    0.32-0.36 ms.

    Impact:
    The optimizer's own host time is the Optimizer.step call's, or, where a closure runs the forward and
    backward inside it (Lightning's `optimizer.step(closure)`), only what follows the last autograd node in
    it. A collective launched inside the step (distributed Shampoo's all-gather, ZeRO's) is
    communication, not the update: its kernels are not the optimizer's, and the host time in the step while
    it is in flight (from its launch to its end) is left out; the message names it (hta_sampled_rank0: 53 ms
    of all-gather per step and 109 ms of host time while it ran, counted before as the optimizer's).
    Per step, from the pair above: fused takes 0.356 of foreach's GPU time G (S, the time saved, is the
    rest) and 0.351 of its host time (H saved). After each `Optimizer.step` the next device work starts
    at N, once the optimizer's last kernel has ended and its own launch has been queued (Q). Fused, one
    kernel of G - S runs from when the GPU is done with the work queued before the step's first kernel
    (P) or from the shorter call's end (its launch), whichever is later; the next work starts at
    max(that end, Q - H), and the impact is N minus that, at most S + H. So the GPU saving counts where
    the GPU is the bottleneck and the host's where the GPU waits for the step's launches. The last call,
    with no work after it in the window, counts the mean of the others. The profiled twins check it:
    from Optimizer.step's start to the step's end, gpu/adamw_foreach takes 490 µs more than
    gpu/adamw_fused (predicted 500), gpu/adamw_foreach_bf16 442 µs more than its fused twin (513).
    gpu/gpt2_conv1d (host-bound, the GPU idle 4.9 of the span's 6.7 ms while 40 kernels are launched
    one by one) 4.16 ms (5.6%; the "E - S" end this rule used before gave 1.74 ms, where an expert
    measured fused 23% faster unprofiled); series_mlp_eager 947 µs (13.7%; re-measured unprofiled,
    0.13-0.42 ms of a ~3.2 ms step: the profiler doubles its host time), gpu/gpt_autocast 2.59 ms
    (10.3%). Plain SGD (one `_foreach_add_`, a single pass) is not reported: fusing it saves no pass.

    On a CPU-only trace the step is the host's alone: the impact is Optimizer.step's span times
    (1 - fused/unfused). The profiled twins gpu/cpu_adamw_loop and gpu/cpu_adamw_fused (AdamW over 4.2 M
    parameters on the project's 2-core AMD EPYC, torch 2.13.0) take 12.87 and 2.47 ms per step: fused
    keeps 0.192 of the for-loop (`foreach=False`, the CPU default). Foreach has no profiled twin: over
    the 33.6 M parameters of the `mlp` workload, unprofiled, for-loop 181.9 ms, foreach 107.8 ms, fused
    25.8 ms (median of 7), so fused keeps 0.239 of foreach. gpu/cpu_mlp (`pista run mlp --device cpu`):
    Optimizer.step 70.4 ms of a 440 ms step; fused saves about 57 ms (an expert measured 50-54 ms).

    Fix:
    `torch.optim.AdamW(params, fused=True)` (Adam, AdamW and SGD have it on CUDA, and on the CPU since
    torch 2.4); for other optimizers,
    compile the step (`torch.compile(opt.step)`), which fuses the foreach ops into a few kernels.

step-event = { $has_event ->
    [yes] { $event }
   *[no] a hand-written update loop after backward()
  }
how = { $how ->
    [foreach] foreach ({ $ops }), { $passes } sweeps over the parameters per call where fused makes one
    [loop] a loop over the parameters (foreach=False, the CPU default), { $ops_per_step } ops per step ({ $ops })
    [hand-written] a Python loop over the parameters, { $ops_per_step } in-place ops per step ({ $ops4 })
   *[per-parameter] one kernel per parameter and operation, { $passes } kernels per call where fused launches one
  }
communication = { $comm ->
    [yes] {" "}Its step also runs { $comm_op }: { $comm_us } of communication on the GPU per step, and the
        { $comm_wait_us } per step the host spends in the step while it is in flight are left out of these figures:
        that is communication (see exposed-communication), which fusing or compiling the update does not shorten.
   *[no] {""}
  }
message = { $device ->
    [cpu] { step-event } runs { how }: it takes { $host_us } of each step on the CPU. Fused it would keep about
        { $kept } of that.
   *[gpu] { step-event } runs { how }: { $kernels_per_step } kernels per step take { $gpu_us } of GPU time
        ({ $gpu_share }% of the device time), and the host spends { $host_us } per step in it, { $exposed_host_us } of
        that with the GPU idle. Fused would take about { $gpu_saving_us } less GPU time and { $host_saving_us } less
        host time per step.{ communication }
  }
advice = { $advice_kind ->
    [hand-written] Replace the loop with torch.optim.{ $optimizer }(model.parameters(), ..., fused=True) and
        opt.step(): one kernel updates every parameter (momentum buffers included) in a single pass, where the loop
        dispatches and launches an op per parameter and operation.
    [cpu] Construct the optimizer with fused=True (torch.optim.{ $optimizer }(params, ..., fused=True), on the CPU
        since torch 2.4): one vectorised pass over each parameter instead of one op per parameter and operation.
    [gpu] Construct the optimizer with fused=True (torch.optim.{ $optimizer }(params, ..., fused=True)): one kernel
        updates every parameter in a single pass over memory (beside one small add to the step counters), and the
        host dispatches two ops instead of a dozen foreach ops and the per-parameter step bookkeeping.
   *[compile] { $optimizer } has no fused implementation: compile its step (opt.step = torch.compile(opt.step)) so
        the foreach ops become a few fused kernels, or switch to Adam/AdamW/SGD with fused=True if that suits.
  }
change = { $fusable ->
    [yes] torch.optim.{ $optimizer }(..., fused=True)
   *[no] compile the step (torch.compile(opt.step))
  }
mode-name = { $mode ->
    [foreach] foreach
    [hand-written] hand-written
   *[per-parameter] per-parameter
  }
fix = { $fix_kind ->
    [cpu] { step-event } takes { $host_us } of CPU time per step running { mode-name }: { change }
    [hand-written] { step-event } runs { $ops_per_step } in-place ops per step ({ $ops3 }): use { change } and
        opt.step()
   *[other] { step-event } takes { $gpu_us } of GPU and { $exposed_host_us } of exposed host time per step running
        { mode-name }: { change }
  }
basis = { $device ->
    [cpu] Optimizer.step's CPU time per step times 1 - { $host_ratio }, the share fused kept of { mode-name } AdamW on a
        2-core AMD EPYC (torch 2.13; gpu/cpu_adamw_loop vs gpu/cpu_adamw_fused); an estimate for other models and CPUs
   *[gpu] how much earlier the device work after each Optimizer.step could start if its kernels took { $gpu_ratio }
        of their time and its host call { $host_ratio } of its own, as fused did on the H200 (gpu/adamw_foreach vs
        gpu/adamw_fused, the same MLP), per step; an estimate for other models
  }
step-call = host { $host_us } ({ $exposed_host_us } with the GPU idle), launched { $kernels } kernel(s), { $gpu_us }
    of GPU time
cpu-step-call = { $host_us } on the CPU, { $ops } aten op(s) dispatched
optimizer-kernel = optimizer kernel launched by { $has_op ->
    [yes] { $op }
   *[no] an unknown op
  }
