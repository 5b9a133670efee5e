## outside-wait: the text of its findings, in English
title = The host blocks with nothing queued on the GPU: it waits on work the trace does not hold
severity-exception = info with no saving claimed: the wait is on work the trace does not hold

# message, advice, fix, basis, one message per note class: by hand (src/pista/i18n/README.md)

docs =
    What:
    A runtime call that blocks the host for a long time (a copy, a memset, a synchronize inside an op)
    while the GPU runs nothing and has nothing queued: no work the trace holds was running, so the call
    waits on something the trace does not show (another process or thread using the GPU, a lock, the
    previous request of a server that overlaps its scheduling with the GPU's work).

    Why:
    Every other rule explains time by the work the trace records; this time has no such work behind it.
    The GPU idles, the host idles, and the cause sits outside the profiled process or thread: fixing
    anything inside the trace does not remove it, so pista names it and does not promise a saving.

    Example:
    TraceLens' SGLang Qwen3-8B decode on an MI300X (foreign/tl_sglang_decode): one hipMemcpyWithStream
    under aten::copy_ (the CUDA-graph runner filling its inputs) blocks the host 463 ms, 97.7% of the
    window, while the GPU runs 29 µs of work; the decode itself is a 1.6 ms hipGraphLaunch and 9.8 ms of
    kernels. The prefill trace (tl_sglang_prefilldecode, held out) blocks 493 ms the same way, 50% of its
    window.

    Impact:
    None claimed: the wait is on work the trace does not hold, so no fix pista can replay backs a saving
    (its time, per step and as a share of the step, is in the message). Info, as a condition to check:
    the window may not be a steady step, or another process may share the GPU. A call counts from
    MIN_CALL_NS, with the GPU busy at most MAX_BUSY_SHARE of it, and the calls together from
    MIN_STEP_SHARE of the step. Explicit syncs outside any op are trailing-sync's and host-sync's, the
    profiler's stop sync nobody's, start-up inside the window (a first call's context creation) the
    one-time rules', and a copy staging its own bytes on the host (a pageable one, or one moving
    STAGING_GB_S or more over the call: kineto's resnet50_num_workers_4 sample, 18.4 MiB in 40 ms with
    the GPU idle) pageable-memcpy's. Where the GPU is busy during the call, the host waits for work the trace holds:
    host-sync's and pageable-memcpy's.

    Fix:
    Profile the other side: the thread or process that holds the GPU or the lock (a server's scheduler,
    another rank, a data pipeline), with the profiler following every thread. If the wait is by design (an
    overlapped scheduler waiting for the next batch), profile a window of steady work instead.

call-item = { $name }{ $has_op ->
        [yes] {" "}in { $op }
       *[no] {""}
    } { $us } (GPU busy { $busy_us }{ $has_step ->
        [yes] , step { $step }
       *[no] {""}
    })
message = { $calls } call(s) block the host { $blocked_us } per step, { $share }% of the step, while the GPU runs
    nothing and has nothing queued: { $longest }. No work the trace holds was running: the call waits on something
    outside it (another process or thread using the GPU, a lock, a server's scheduler overlapping the previous
    request). pista cannot tell what, nor what removing it would save.
advice = Profile the other side: the thread or process that holds the GPU or the lock (a server's scheduler, another
    rank, a data pipeline), with the profiler following every thread. If the wait is by design (an overlapped
    scheduler waiting for its next batch), profile a window of steady work instead.
fix = { $name } blocks the host { $us } with nothing queued on the GPU: find what it waits on outside this trace
    (another thread or process)
basis = none claimed: the wait is on work the trace does not hold (its time is in the message)
wait-note = the host blocked with the GPU busy { $busy_us }{ $has_op ->
        [yes] , in { $op }
       *[no] {""}
    }
