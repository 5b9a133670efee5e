## memory-growth: the text of its findings, in English
title = Memory grows step after step
severity-exception = a leak costs memory, not time: graded by how soon the device runs out

# message, advice, fix, basis, one message per note class: by hand (src/pista/i18n/README.md)

# the error as CUDA writes it, in every language (split where the docs' line breaks it)
-cuda-oom = CUDA out of
    memory

docs =
    What:
    Memory that grows step after step: in a `profile_memory=True` trace, the bytes allocated on a
    device at the end of each profiled step rise every step. The usual cause is a tensor kept across
    steps with its autograd graph (`losses.append(loss)` instead of `loss.item()` or `loss.detach()`),
    or a cache that only grows. The rule names the ops that allocated the memory still held at the end
    of the window.

    Why:
    Each step keeps its activations alive, so memory climbs until the allocator runs out ({ -cuda-oom }) hours into a run; before that, a fuller allocator fragments and calls cudaMalloc more often.

    Example:
    gpu/memory_leak on an H200: a 2048-8192-2048 MLP step that appends its loss (with the graph) to a
    list: allocated memory at the step ends is 663.8, 739.3 and 814.8 MB, +75.5 MB per step; the H200's
    150.1 GB last about 1,980 more steps. gpu/memory_steady (the same loop appending `loss.detach()`)
    grows 512 bytes per step and stays silent.

    Impact:
    Not time: a leak costs nothing per step until the run fails. The finding is the documented exception
    to severity from impact: warning whenever it fires, critical when the device would run out within
    CRITICAL_STEPS_TO_OOM steps at this rate. Its impact is 0 µs.

    Fix:
    Keep scalars as Python numbers (`loss.item()`, once every N steps) or detach what you keep
    (`loss.detach()`); clear caches and lists that outlive a step; check with
    `torch.cuda.memory_allocated()` at each step end.

message = Memory allocated on { $device } at the end of each of { $steps } steps rises from { $first } to
    { $last }, { $growth } more every step{ $has_oom ->
        [yes] ; the device's { $capacity } last about { $to_oom } more steps at this rate
       *[no] {""}
    }.{ $has_op ->
        [yes] {" "}Most of what the last step still holds was allocated by { $top_op }.
       *[no] {""}
    }
advice = Something keeps each step's tensors alive: keep scalars as numbers (loss.item() every N steps) or
    detach what you keep (loss.detach()), and clear lists and caches that outlive a step{ $has_op ->
        [yes] ; start with what holds the outputs of { $top_op }.
       *[no] .
    }
fix = { $device } memory grows { $growth } per step{ $has_op ->
        [yes] {" "}(held from { $top_op })
       *[no] {""}
    }: stop keeping tensors with their graph across steps (loss.detach() or loss.item()).
basis = memory, not time: bytes allocated at each step's end, growing every step (no time saved per step)
held = { $mb } MB allocated here in the last step, still held at the end
