## queued-wait: the text of its findings, in English
title = The GPU idles with its next work already queued: it waits on something the trace does not show
severity-exception = info with no saving claimed for the wait before the window's first recorded device work: the trace holds nothing of what the GPU ran or waited for then

# message, advice, fix, basis, one message per note class: by hand (src/pista/i18n/README.md)

docs =
    What:
    The GPU runs nothing for a millisecond or more while the work that ends that idle had already been
    launched before it began: its queue held work, so the host was not what it waited for. Something the
    trace does not show held it: a stream waiting on an event (cudaStreamWaitEvent) for another stream or
    another rank, a collective's peers, nodes of a CUDA graph replay that the profiler did not record, or,
    before the window's first recorded device work, work launched before the profiler started.

    Why:
    The other rules read GPU idle as the host's: dispatch (overhead-bound, launch-bound), host work
    (host-work, gpu-idle), syncs. Where the next work was queued all along, no host fix shortens the idle,
    and a reading that calls it "balanced" or host-bound points at the wrong side. The wait has a cause the
    trace names only by where it ends (a graph replay, a collective, a kernel on a stream) and the user has
    to look for it there.

    Example:
    HTA's hta_negq_rank0 (TorchRec with DDP and CUDA graphs, rank 0): 106 ms of the 216 ms step the GPU
    runs nothing with work queued 57-197 ms earlier; most of it ends at the first recorded node of a
    backward CUDA-graph replay, queued at +187 ms and run 63 ms after the GPU went quiet at +253 ms.
    TraceLens' tl_vllm_piecewise_graph (vLLM gpt-oss on an MI300X, a window without steps): the first copy,
    launched at +2.2 ms, runs at +151 ms with nothing recorded before it; from then the kernels run back to
    back to the window's end while the host had launched them all by +26 ms (its committed sibling
    tl_vllm_graph_exec: 7.8 ms before the first copy, the host done at +2.3 ms). All read "balanced" with no
    finding before.

    Impact:
    Inside the window: the steps replayed with the work that waited through such an idle run as soon as it
    is launched and its stream is free (the trace's typical launch latency): what removing the wait would
    save, an upper bound (a wait on another rank is that rank's time; graph nodes the profiler did not
    record are work, not idle). A symptom: the engine credits it after the causes. Before the window's first
    recorded device work: no saving claimed, info (SEVERITY_EXCEPTION): the trace holds nothing of what the
    GPU ran or waited for then. The idle it names is no dispatch idle, so overhead-bound, launch-bound and
    many-calls leave it out (CLAIMS_FIRST).

    Fix:
    Find what the GPU waits on before optimising the host: the streams' cudaStreamWaitEvent calls just
    before the idle and what their events wait for; with a collective behind it, the other ranks' traces at
    the same moment (the last rank to arrive sets the wait); for CUDA graph replays, a profile with the graphs
    off, or a profiler that records graph nodes, shows what their first nodes do. Before the window's first
    work: profile a window that starts before the GPU's queue (schedule(wait=..., warmup=...)).

unit = { $unit ->
    [step] step
   *[window] window
  }
next-name = { $next ->
    [graph] before the first recorded node of a CUDA graph replay
    [collective] before a collective
    [stream] before other queued work on a stream
   *[none] {""}
  }
end-item = { $us } { next-name }
inside = { $stall_us } per { unit } in { $stalls } stretch(es) (the longest { $longest_us }) the GPU runs nothing while
    the work that ends each stretch had been launched before it began, { $lo }-{ $hi } ms before it ran: the host was not
    what the GPU waited for. Per { unit }: { $ends }. Something the trace does not show held the GPU: a stream waiting
    on an event (cudaStreamWaitEvent) for another stream or another rank, a collective's peers, or graph nodes the
    profiler did not record (then the GPU was not idle at all).
first-work = The window's first recorded device work ({ $first_name }), launched at +{ $first_launch_at_us }, runs
    only at +{ $first_start_at_us }: for { $first_wait_us } the GPU has its work queued and nothing recorded. From then
    it is busy { $busy_after }% of the rest of the window, while the host had launched everything by
    +{ $host_done_at_us }: the GPU, not the host, sets this window's time, and the idle before its first work is work
    or a wait the trace does not hold (work launched before the profiler started, such as a server's previous batch,
    or another process on the GPU).
message = { $parts ->
    [both] { inside } { first-work }
    [inside] { inside }
    [first] { first-work }
   *[none] {""}
  }
advice-inside = Find what the GPU waits on before optimising the host: fusing, compiling or moving host work does not
    shorten this idle. Look at the streams' cudaStreamWaitEvent calls just before it and at what their events wait
    for; with a collective behind it, compare the other ranks' traces at the same moment (the last rank to arrive sets
    the wait); for CUDA graph replays, profile once with the graphs off, or with a profiler that records graph nodes,
    to see what their first nodes do. The saving shown is what removing the wait would give at most.
advice-first = Read this window as GPU-bound: to see what the GPU runs first, start the profiler before the work it
    measures is launched, or profile a longer window with torch.profiler.schedule(wait=..., warmup=...); the host's
    side is not what to speed up here.
advice = { $parts ->
    [both] { advice-inside } { advice-first }
    [inside] { advice-inside }
    [first] { advice-first }
   *[none] {""}
  }
fix = { $parts ->
    [both] { fix-inside }
    [inside] { fix-inside }
   *[other] the GPU's first recorded work waits { $first_wait_us } after its launch with nothing recorded: the window
        is GPU-bound; profile one that starts before the GPU's queue
  }
fix-inside = the GPU waits { $stall_us } per { unit } with its next work queued (most { next-name }): find the
    dependency (stream events, other ranks, graph nodes) before optimising the host
basis = { $parts ->
    [both] { basis-inside }
    [inside] { basis-inside }
   *[other] none claimed: the trace holds nothing of what the GPU ran or waited for before its first recorded work
  }
basis-inside = the steps replayed with the work that waited through such an idle run as soon as it is launched and its
    stream is free; upper bound
kind-name = { $kind ->
    [graph] a CUDA graph replay's node
    [collective] a collective
    [stream] queued work
   *[first] the window's first recorded work
  }
stall-note = GPU idle { $idle_us } with { kind-name } launched { $ahead_us } before it ran
