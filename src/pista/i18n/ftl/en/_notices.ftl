# pista's notices: what the profiler did not record, what the verdict and the one-time costs leave open,
# and a rule that failed (pista.notices, pista.isolation, pista.cycles; arguments: args/_notices.py).
# One message per notice class, its name in kebab case; each is one line.

rule-failed = { $stage ->
    [replay] rule { $rule }'s fix could not be replayed on this trace ({ $error }): its findings keep the rule's
        own estimate; the other findings stand. Please report it with the trace if you can
   *[check] rule { $rule } failed on this trace ({ $error }) and is left out; the other rules' findings stand.
        Please report it with the trace if you can
  }
one-time-cost = { $share }% of this window is one-time cost ({ $rules }): the table, the totals and the verdict
    mostly show it; re-profile after a warm-up (torch.profiler.schedule with warmup steps) to read the steady steps
copy-bound = balanced weighs the GPU's kernels, which run { $kernels }% of the window, but the GPU is busy
    { $busy }% of it and { $copies }% of its time is copies: the transfers between host and device set the pace,
    not the host's dispatch nor the kernels
balanced-host = balanced: the host takes { $ratio }x the GPU's time and the GPU computes { $kernels }% of the
    window; the profiler about doubles host time, so without it the GPU is likely the limit: time a step
    unprofiled before acting on the idle GPU
lost-records = { $calls } call(s) that put work on the GPU ({ $names }) but no kernel, copy or memset record: the
    GPU's records were lost (the profiler's activity buffers dropped or not flushed before the export); what
    follows reads the host alone. Export after the profiler has stopped (on_trace_ready or after the `with` block)
no-gpu-work = the trace has a GPU{ $has_devices ->
        [yes] {" "}({ $devices })
       *[no] {""}
    }{ $has_calls ->
        [yes] {" "}and { $calls } CUDA runtime call(s)
       *[no] {""}
    } but nothing ran on it: the model ran on the CPU (move it and its inputs with .to('cuda') if the GPU was
    meant), or the profiler ran without ProfilerActivity.CUDA
reference-conv = { $share }% of the window ({ $ms } ms in { $calls } calls) is { $name }, PyTorch's reference CPU
    convolution (im2col and a GEMM per image): these convolutions ran without a oneDNN (mkldnn) kernel. On a Mac
    with Apple silicon, torch>=1.12 runs them on the GPU: move the model and its inputs to device='mps'
    (torch.backends.mps.is_available() says whether it can); on other CPUs a torch build with oneDNN
    (torch.backends.mkldnn.is_available()) runs them as aten::mkldnn_convolution
no-host-events = no host (CPU) events, only GPU activity: Self CPU is 0 and the verdict cannot weigh the host
    against the GPU; profile with ProfilerActivity.CPU as well
cpu-activity-missing = CPU activity was not recorded: the trace holds the GPU's work and { $calls } runtime
    call(s) but no op, so what the host does between those calls (Python, ops, a data loader, waiting) cannot be
    told apart, nor why the GPU idles { $idle }% of the window; no host-overhead verdict and no host time by
    region are given. Profile with activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]
shared-cpu = the CPU was shared while this trace was taken: { $op } of { $mflop } MFLOP took { $ms } ms, and the
    median GEMM call { $factor }x what one slow core needs; other processes held the cores (or torch ran more
    threads than the job's cores): the times here are the machine's load, not the program's. Re-capture on a
    quiet machine, with torch.set_num_threads at most the cores the job owns
cpu-step-spread = the steps of this CPU-only trace vary { $spread }x ({ $shortest_ms } ms to { $longest_ms } ms):
    the machine was likely busy with other work; re-capture on a quiet machine before trusting small differences
negative-self-times = { $events } event(s) have a negative self time: python_function frames and the events
    around them overlap without nesting (torch nests them the same way); the table leaves the frames out,
    `pista sql` shows those self times as they are
zero-durations = { $zero } of { $complete } complete events have a zero or missing duration: self times, totals
    and the verdict undercount
cycles-overlap = cycles { $first } and { $second } overlap in time: two processes that share a pid (containers
    on one machine?) rather than one process's cycles
# a folder of ranks (pista.distributed)
rank-notice = rank { $rank }: { $notice }
world-size = the traces say world_size { $world }; the folder holds { $ranks } rank(s)
ranks-by-order = { $count } trace(s) carry no rank (no distributedInfo, no rank-N in the name): numbered by file
    order
skipped-links = skipped { $count } symbolic link(s) in { $folder } (first: { $first }): the folder's own files are
    read, not what a link points to
workers-capped = --workers { $workers }: this machine lets pista use { $cores } core(s); running { $processes }
    process(es)
cycles-options-ignored = one process's cycles are analyzed here, one file after another: --engine, --scheduler
    and --workers are for a folder of ranks
