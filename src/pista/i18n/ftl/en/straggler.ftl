## straggler: the text of its findings, in English
title = Straggler: one rank keeps the others waiting

# message, advice, fix, basis, one message per note class: by hand (src/pista/i18n/README.md)

docs =
    What:
    One rank is late: it reaches its collectives (all-reduce, all-gather, ...) well after the other
    ranks do, or its steps take longer than theirs, so every other rank waits for it inside the
    collective. Seen only across ranks: `{"pista analyze DIR"}` over a folder of per-rank traces.

    Why:
    A collective finishes when its last participant arrives. The time the others spend waiting shows up
    in their traces as long, exposed communication, and the whole job runs at the straggler's pace: one
    slow rank of a thousand makes a thousand GPUs slow.

    Example:
    Two gloo ranks training a small DDP MLP on the CPU, rank 1 sleeping 30 ms before each forward pass:
    rank 1 reaches every all-reduce about 30 ms after rank 0, and rank 0 waits those 30 ms per step in
    `gloo:all_reduce` (tests/fixtures/gloo/straggler_2). The host region rank 1 spends more time in than
    the others, `slow_input` (30.2 ms per step, absent on rank 0), is named as the cause.

    Impact:
    Per step: how much later than the median of the other ranks the straggler calls its collectives
    (the median over each step's matched collectives, averaged over the steps): the time the others
    wait for it every step, which the job saves when the straggler keeps pace. Share of the
    straggler's median step. Without matched collectives, its median step less the others'. The wait
    the others spend is their exposed communication too: over a folder it is taken out of their
    exposed-communication findings, so it counts once. Before, a fixed warning. straggler_2: 31.9 ms
    of a 38.4 ms step (83%, critical); straggler_4: 31.3 of 52.4 ms (60%, critical).

    Fix:
    Look at what the late rank does before its collectives that the others do not: uneven data shards
    or sequence lengths, a slow data loader or file system on that host, logging or checkpointing on
    one rank only, a slower or throttled device, a noisy neighbour. Balance the work, move one-rank-only
    work off the step, or replace the slow host.

message = { $cause ->
    [late] Rank { $rank } reaches its collectives { $late_us } after the median of the other { $others } rank(s)
        (median over { $matched } matched collectives; its median step is { $step_us }): they wait { $wait_us } per
        step for it.
   *[slow-steps] Rank { $rank }'s median step takes { $step_us } against { $others_step_us } on the other
        { $others } rank(s), { $wait_us } more per step.
  }{ $exposed ->
    [yes] {" "}The others wait in communication { $peers_exposed_us } per step (median), rank { $rank } only
        { $own_exposed_us }.
   *[no] {""}
  }{ $extra ->
    [none] {""}
   *[other] {" "}Rank { $rank } spends { $extra_us } per step in { $extra_name }, { $alone ->
            [yes] the others do not run it
           *[no] the others { $extra_others_us }
        }.
  }
advice = { $extra ->
    [device] { $alone ->
            [yes] Rank { $rank } runs { $extra_name } ({ $extra_us } per step) and the others do not: it runs
                different kernels, so its settings differ (dtype, TF32 or autocast, a library version): make them
                the same on every rank.
           *[no] { $extra_name } takes { $extra_us } per step on rank { $rank } and { $extra_others_us } on the
                others: its inputs are bigger (uneven shards, longer sequences, padding) or its GPU is slower
                (clocks, throttling); balance the inputs or check the device.
        }
    [host] { $extra_name } costs rank { $rank } { $extra_more_us } more per step than the others: if it reads or
        prepares input, load in DataLoader workers (num_workers>0) or balance the shards; if it logs, evaluates or
        checkpoints on rank { $rank } only, do it outside the step or asynchronously; otherwise make it as cheap as
        on the other ranks.
   *[none] { $cause ->
            [late] No host region of rank { $rank } explains its lateness: compare its inputs (shard sizes,
                sequence lengths) and its device (clocks, throttling, a noisy neighbour) with the others'; balance
                the work or move the slow host out of the job.
           *[slow-steps] Rank { $rank } runs its steps slower with no collective to wait in: compare its settings
                (precision, TF32, batch size), device and inputs with the other ranks' and align them.
        }
  }
fix = { $extra ->
    [device] rank { $rank } spends { $extra_more_us } more per step in { $extra_name } than the other ranks
        ({ $wait_us } per step behind them): give it the same settings and inputs as theirs
    [host] rank { $rank } spends { $extra_more_us } more per step in { $extra_name } than the other ranks, who wait
        { $wait_us } per step for it: take that work off the step on rank { $rank } or balance it
   *[none] { $cause ->
            [late] the other ranks wait { $wait_us } per step at their collectives for rank { $rank }: find what
                delays rank { $rank } (inputs, device, host) and balance it
           *[slow-steps] rank { $rank }'s steps take { $step_us } against { $others_step_us } on the others: align
                rank { $rank }'s settings, device and inputs with theirs
        }
  }
basis = { $cause ->
    [late] per step, how much later than the median other rank it calls its collectives (median over the step's
        collectives), averaged over the steps: the time the others wait for it
   *[slow-steps] its median step less the other ranks' median step: what it would save running at their pace
  }
late-call = { $late_us } late (#{ $nth } of its name in the step)
slow-step = { $more_us } longer than the other ranks' median step ({ $others_us })
