## profiler-overhead: the text of its findings, in English
title = Profiler overhead inflates the ops it lands in

# message, advice, fix, basis, one message per note class: by hand (src/pista/i18n/README.md)

docs =
    What:
    The profiler's own work ("Activity Buffer Request", "Buffer Flush": CUPTI allocating and
    draining its activity buffers) drawn on the pid -1 overhead lane, and which ops it landed in.

    Why:
    This time is spent on the profiled thread while an op is running: the op's wall time (CPU total)
    and every region above it grow by that much, and the GPU waits through it, though the program
    without the profiler would not pay it. torch nests the event under the op, so Self CPU stays
    right, but step widths, CPU totals and gaps on the GPU timeline do not. Without a schedule's
    warm-up steps the first buffer request lands in the first profiled op.

    Example:
    `gpu/profiler_first_step` (a warmed-up 32-layer MLP forward profiled with `schedule(wait=0,
    warmup=0, active=3)`): one 2.600 ms Activity Buffer Request inside the first aten::addmm of step 0,
    90% of that op's 2.890 ms; step 0 is 6.9 ms against 3.8 ms for the others. `gpu/window_sync_warm`
    (one call, no schedule): 1.811 ms inside aten::mm, 77% of the window.

    Impact:
    One-time: the GPU idle time during the profiler's events, spread over the window's steps; the
    program without the profiler does not pay it, and a schedule's warm-up steps move it out of the
    window. gpu/profiler_first_step: 2.6 ms over 3 steps, 867 µs per step against a 3.8 ms median step
    (critical); gpu/window_sync_warm 1.8 ms, 77% of its window; seed_mm4096_compile_cold 2.9 ms, 58%.
    Events inside a cold first step or a dead window belong to those findings (seed_mm64_cold,
    gpu/window_sync_cold), and a request that costs under 1% of the step is noise: big_gpt_eager_20steps'
    3.1 ms over 20 steps is 0.3% of its 52.7 ms step (an info finding before). A window that recorded no
    op, region or device work (a few runtime calls at most) holds nothing the profiler inflated:
    flowmatch_pytorch_trace (foreign: 0 ops, no kernel) read as 8.4% profiler overhead inside an idle
    cudaDeviceSynchronize before (issue 35).

    Fix:
    Nothing to change in the program: profile with `schedule(wait=1, warmup=1, active=N)` (the buffers
    are requested in the warm-up steps), profile more steps so one request weighs less, and discount the
    named ops' CPU totals by that amount.

schedule = torch.profiler.schedule(wait=1, warmup=1, active={ $steps })
where = { $in_steps ->
    [one] {" "}in step { $step_list }
    [many] {" "}in steps { $step_list }
   *[none] {""}
  }
op-item = { $us } inside { $name } ({ $percent }% of { $several ->
        [no] its { $op_us }
       *[other] the { $op_us } of its { $calls } calls
    })
outside-item = { $us } outside any op
message = { $events } profiler overhead event(s) ({ $names }){ where }, { $total_us } in all, { $window_percent }%
    of the window, { $idle_us } of it with the GPU idle: { $parts }. The program does not pay it without the
    profiler.
advice = Nothing to change in the program: profile with { schedule } so the profiler sets up its buffers in the
    warm-up steps, profile more steps so a request weighs less, and discount it { $has_ops ->
        [yes] from { $op }'s CPU total and
       *[no] from
    } its step's width.
fix = The profiler's own { $first_name } takes { $total_us }{ $has_ops ->
        [yes] {" "}inside { $op }
       *[no] {""}
    }{ where }: profile with { schedule } so it falls in the warm-up steps.
basis = one-time: the GPU idle during the profiler's own events; the program without the profiler does not pay it
inside-op = inside { $op }, { $percent }% of its wall time{ $has_together ->
        [yes] ; all of them there: { $together }%
       *[no] {""}
    }
outside-ops = in no op, { $us }
