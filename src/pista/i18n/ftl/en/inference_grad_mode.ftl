## inference-grad-mode: the text of its findings, in English
title = Inference runs in grad mode: every op builds an autograd node
severity-exception = info without ProfilerStep markers: a training forward profiled alone, its backward outside the window, looks the same

# message, advice, fix, basis, one message per note class: by hand (src/pista/i18n/README.md)

docs =
    What:
    Inference with grad mode on: steps that run no backward (no autograd engine node, no optimizer
    step) while their ops record autograd nodes, because the loop is not under `torch.inference_mode()`
    or `torch.no_grad()`. Torch records each op's `Sequence number` only in grad mode, and the number
    moves on by one for each node the forward builds, so the distinct numbers in a step count its nodes.

    Why:
    Each node is host work inside the op (the backward function, its edges, the tensors it saves), and
    the forward keeps every activation it saves for a backward that never runs, until its output goes:
    more time a call where the host is the limit (decoding, small batches) and more memory at any size.
    `model.eval()` does not turn it off; `generate()` in transformers does, a hand-written loop does not.

    Example:
    gpu/gpt2_flash_grad (GPT-2 124M, batch-1 decoding, H200): 444 nodes a token; the KV cache carries
    the autograd history of every earlier token, so memory grows token after token (allocator-churn).
    Unprofiled, in one process (gpu/grad_time.py), torch.inference_mode() took the token from 6.21 to 4.94
    ms, and ResNet-50 bf16 inference from 5.20 to 4.22 ms (batch 32) and 7.67 to 6.29 ms (batch 8), and
    ResNet-50's peak memory from 1434 to 267 MiB and 426 to 130 MiB.

    Impact:
    Per step, the nodes times GRAD_NODE_US (the median of the twins' saving per node: GPT-2 2.75 µs,
    ResNet-50 5.6 and 8.2; CPU_GRAD_NODE_US, 2.0, without a GPU: a CPU MLP's twins) times the profiler's
    inflation of host time (PROFILER_HOST_INFLATION, 2, as overhead-bound takes it), at most the step's
    per-op GPU idle (what the host's dispatch holds up) where a GPU ran. gpu/gpt2_flash_grad 5.0 ms of
    an 18.6 ms token; gpu/resnet50_grad 2.0 ms of a 22.4 ms step (the profiled twins differ by about 9
    ms, part of it the two processes' machine; unprofiled each saved 19-20%); gpu/cpu_infer_grad 196 µs
    of a 0.96 ms step (unprofiled 91-117 µs of 715). The memory is not in the impact (a trace without
    memory events cannot show it). overhead-bound, launch-bound and many-calls leave this idle to this
    rule (`claimed_idle`). Under 1% of the step the rule is silent, and where no op builds a node (a
    loop over tensors that need no grad) it does not fire. Without ProfilerStep markers it is info, with
    that condition said: a training forward profiled alone, its backward outside the window, looks the
    same.

    Fix:
    Run the loop under `with torch.inference_mode():` (or `torch.no_grad()` where its tensors must meet
    autograd later), around the model calls, with `model.eval()` as well.

top-item = { $name } { $per_step }
message = { $lead ->
    [window] The trace holds no ProfilerStep and no backward (if the program trains and its backward ran outside the
        profiled window, this does not apply)
    [all] No step runs a backward
   *[some] { $steps } of the { $of_steps } steps run no backward
  }, yet the ops record autograd nodes: { $nodes } a step ({ $top }), so the loop runs outside torch.inference_mode()
    and torch.no_grad(). Each node is host work inside its op, about { $cost_us } a step as profiled{ $capped ->
        [yes] , at most the GPU idle while the host dispatches in those steps ({ $idle_us })
       *[no] {""}
    }; and the forward keeps every activation it saves for a backward that never runs{ $cache ->
        [yes] {" "}(memory grows: { $malloc_steps } of { $steps } steps call cudaMalloc, and { $growing_op }'s input
            grows step after step: a cache kept across steps carries the autograd graph of every earlier step)
       *[no] {""}
    }. On the H200, unprofiled, inference_mode took GPT-2 decoding from 6.21 to 4.94 ms a token and ResNet-50 at batch
    32 from 5.20 to 4.22 ms a step (19-20%), and ResNet-50's peak memory from 1434 to 267 MiB (GPT-2's 375 to
    359).{ $gpu ->
        [yes] {""}
       *[no] {" "}On a CPU, a 16-block MLP took 715 µs a step in grad mode against 613-623 µs.
    }
advice = Run the loop under `with torch.inference_mode():` around the model calls (torch.no_grad() where its tensors
    must meet autograd later), with model.eval() as well; transformers' generate() does this itself, a hand-written
    decoding loop does not.
fix = inference runs in grad mode ({ $nodes } autograd nodes a step): wrap it in torch.inference_mode().
basis = the autograd nodes a step times { $node_us } µs each (unprofiled, { $gpu ->
        [yes] the median of the H200 twins: 2.75-8.2 µs
       *[no] a CPU MLP's twins, without a GPU
    }) times { $inflation } for the profiler's inflation of host time{ $capped ->
        [yes] , at most the GPU idle while the host dispatches in those steps
       *[no] {""}
    }; memory not counted
node-op = builds autograd node (Sequence number { $seq })
